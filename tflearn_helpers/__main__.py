"""Command line: ``python -m tflearn_helpers doctor`` (see README)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tflearn_helpers")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="check that this machine is ready for the course")
    doctor.add_argument("--devices", type=int, default=2, help="simulated devices to test")
    doctor.add_argument("--timeout", type=float, default=180, help="seconds before giving up")
    args = parser.parse_args(argv)
    from .runtime.doctor import main as doctor_main

    return doctor_main(devices=args.devices, timeout=args.timeout)


if __name__ == "__main__":
    sys.exit(main())
