"""policyd: answers ACP permission requests from CEL policy."""

__version__ = "0.1.0"
