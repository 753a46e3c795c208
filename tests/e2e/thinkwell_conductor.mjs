// @thinkwell/conductor (npm) on this process's stdio, for tests/test_chain.py: a conductor
// nobody here wrote. argv[2]: JSON [proxy argv, agent argv]; the conductor spawns both.
import { createInterface } from "node:readline";
import { Conductor, fromConnectors, StdioConnector } from "@thinkwell/conductor";

const [proxy, agent] = JSON.parse(process.argv[2]);
const component = (argv) => new StdioConnector({ command: argv[0], args: argv.slice(1) });

// The client's end: this process's stdin and stdout (the package ships connectors for
// components and in-memory channels only).
const ownStdio = {
  async connect() {
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    return {
      send(message) { process.stdout.write(JSON.stringify(message) + "\n"); },
      messages: (async function* () {
        for await (const line of lines) if (line.trim()) yield JSON.parse(line);
      })(),
      async close() { lines.close(); },
    };
  },
};

const conductor = new Conductor({
  instantiator: fromConnectors(component(agent), [component(proxy)]),
  mcpBridgeMode: "disabled",
});
await conductor.connect(ownStdio);
process.exit(0);
