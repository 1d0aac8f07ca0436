"""Command line: ``python -m tflearn_helpers doctor`` / ``course`` (see README)."""

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
    course = sub.add_parser("course", help="execute the course into HTML with a summary page")
    course.add_argument("--out", default="build", help="output folder (default: build)")
    course.add_argument("--scale", choices=("smoke", "cpu", "gpu"), help="scale profile")
    course.add_argument("--only", default="", help="run notebooks whose name contains this")
    course.add_argument(
        "--folders",
        default="notebooks",
        help="comma-separated: notebooks, solutions, exercises (default: notebooks)",
    )
    course.add_argument("--exclude", default="", help="comma-separated name parts to skip")
    course.add_argument("--root", help="folder holding notebooks/ (default: the course's)")
    course.add_argument("--cell-timeout", type=float, default=1800, help="seconds per cell")
    args = parser.parse_args(argv)
    if args.command == "doctor":
        from .doctor import main as doctor_main

        return doctor_main(devices=args.devices, timeout=args.timeout)
    from .tooling.course import run_course

    return run_course(
        args.out,
        scale=args.scale,
        only=args.only,
        folders=tuple(f for f in args.folders.split(",") if f),
        exclude=tuple(x for x in args.exclude.split(",") if x),
        root=args.root,
        cell_timeout=args.cell_timeout,
    )


if __name__ == "__main__":
    sys.exit(main())
