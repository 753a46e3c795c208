"""The policy author's commands: ``explain``, ``test``, ``replay``, ``suggest``
(arguments here; each command in its own module)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see policyd.cli)
if TYPE_CHECKING:  # --help stays light: pydantic and structlog load only to run a command
    from policyd.settings import Settings

COMMANDS = ("explain", "test", "replay", "suggest")
#: Adds --policy/--config/--log-level to a parser.
PolicyArgs = Callable[[argparse.ArgumentParser], None]


def _explain(ex: argparse.ArgumentParser, policy_args: PolicyArgs) -> None:
    policy_args(ex)
    ex.add_argument("file", nargs="?", help="JSON lines: eval lines or a decision log (- for stdin)")
    ex.add_argument("--command", dest="command_text", help="explain this shell command (an execute tool call)")
    ex.add_argument("--cwd", help="session cwd for --command (default: the current directory)")
    ex.add_argument("--select", metavar="TEXT", help="only requests whose tool call id, title or command has TEXT")
    ex.add_argument("--json", action="store_true", help="one JSON object per request")
    ex.add_argument("--sandbox", dest="decide_sandboxed", action="store_true",
                    help="decide as in a sandboxed session (session.sandboxed)")


def _test(te: argparse.ArgumentParser, policy_args: PolicyArgs) -> None:
    policy_args(te)
    te.add_argument("files", nargs="+", metavar="CASES.jsonl")
    te.add_argument("--home", help="home directory of the cases (default: policyd.core.cases.CASES_HOME, /home/dev)")
    te.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    te.add_argument("--json", action="store_true", help="one JSON object per case, then a summary")
    te.add_argument("--sandbox", dest="decide_sandboxed", action="store_true",
                    help="decide as in a sandboxed session (session.sandboxed)")


def _replay(rp: argparse.ArgumentParser, policy_args: PolicyArgs) -> None:
    rp.add_argument("logs", nargs="+", metavar="LOG")
    rp.add_argument("--policy", action="append", metavar="PATH", help="the draft policy (repeatable)")
    rp.add_argument("--fail-on", choices=["allow-widening", "any-change"], help="exit 1 on such a difference")
    rp.add_argument("--json", action="store_true", help="the report as one JSON object")
    rp.add_argument("--jobs", type=int, default=0, metavar="N",
                    help="processes deciding the distinct requests (default: one per CPU)")
    rp.add_argument("--config", metavar="FILE")
    rp.add_argument("--log-level", choices=["debug", "info", "warning", "error"])


def _suggest(sg: argparse.ArgumentParser, policy_args: PolicyArgs) -> None:
    sg.add_argument("logs", nargs="+", metavar="LOG")
    sg.add_argument("--min-count", type=int, default=1, metavar="N", help="only rules backed by N answers")
    sg.add_argument("--config", metavar="FILE")
    sg.add_argument("--log-level", choices=["debug", "info", "warning", "error"])


#: The four commands: (help line, what adds the arguments; given the --policy/--config/--log-level adder).
PARSERS: dict[str, tuple[str, Callable[[argparse.ArgumentParser, PolicyArgs], None]]] = {
    "explain": ("why the policy decides a request: facts, every rule, each operand", _explain),
    "test": ("run JSON-lines policy test cases; non-zero exit on a failure", _test),
    "replay": ("decide logged requests under a draft policy; differences by transition", _replay),
    "suggest": ("propose the narrowest rules for requests humans answered", _suggest),
}


def run(args: argparse.Namespace, settings: Settings) -> int:
    from policyd import logs

    """Dispatch one of :data:`COMMANDS`. Their output is the report: the operational log
    (``policy.loaded``…) is shown only from ``warning`` on unless ``--log-level`` says."""
    if not getattr(args, "log_level", None):
        logs.configure("warning", None, settings.log_format)
    match args.command:
        case "explain":
            from policyd.cli import explain

            return explain.run(settings, args.file, args.command_text, args.cwd, args.json, args.select,
                               args.decide_sandboxed)
        case "test":
            from policyd.cli import policytest

            return policytest.run(settings, args.files, args.home or policytest.CASES_HOME, args.verbose,
                                  args.json, args.decide_sandboxed)
        case "replay":
            from policyd.cli import replay

            return replay.run(args.policy, args.logs, settings.home, args.json, args.fail_on, args.jobs)
        case _:
            from policyd.cli import suggest

            return suggest.run(args.logs, settings.home, args.min_count)
