"""Exercise feedback: right, wrong (with a hint) or not attempted, never the answer.

Each lesson's checks live in ``checks/lessonNN.py`` and register themselves with
``@exercise("NN.k")``. A check receives the learner's answer and returns ``None`` when it
is right, or a hint (a string) when it is wrong; it must not put the expected answer in
the hint. In a notebook: ``check("00.1", my_answer)``.

Unfilled exercises must run to the end under "Run All": an answer still holding the
stub (``...``, ``None``, or a function whose body is only ``...``/``pass``/``return None``)
is *not attempted*, never *wrong* (but for a check registered with
``@exercise("NN.k", pass_answers=True)``, whose stub is ``...``: there a body of ``pass`` is
the learner's answer, "do nothing", and judged); so is an answer checked with an earlier
exercise's answer (``check("01.2", make_dataset, strategy)``) while that one is still a stub. A cell
that needs the answer guards itself with
``if ready("01.2", make_step): ...``. A check may register a quick test of the answers that
cell is about to run (``@before_running("NN.k")``, given what ``ready`` is given): when it
finds a mistake, ``ready`` prints the hint and returns False, and the ``check`` after it says
"wrong" with that hint (a launch that cannot work is never started: no hang, no traceback).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NOT_ATTEMPTED",
    "RIGHT",
    "WRONG",
    "attempted",
    "before_running",
    "cell_course_calls",
    "check",
    "course_calls",
    "course_code",
    "exercise",
    "learner_source",
    "ready",
    "watching",
]

_REGISTRY: dict[str, object] = {}
_BEFORE: dict[str, object] = {}  # exercise -> a quick test ``ready`` runs on the answers
_REFUSED: dict[str, str] = {}  # exercise -> the hint its last ``ready`` printed
_PASS_ANSWERS: set[str] = set()  # exercises whose stub is ``...``: ``pass`` is written there

RIGHT, WRONG, NOT_ATTEMPTED = "right", "wrong", "not attempted"
_PACKAGE = Path(__file__).resolve().parents[1]  # the whole package, not only checks/


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == RIGHT

    def __str__(self) -> str:
        mark = {RIGHT: "[right]", WRONG: "[wrong]", NOT_ATTEMPTED: "[not attempted]"}
        return f"{mark[self.status]} exercise {self.exercise}: {self.message}"


def exercise(exercise_id: str, pass_answers: bool = False):
    """Register the decorated function as the check for ``exercise_id`` ("NN.k");
    ``pass_answers``: a function whose body is ``pass`` is an answer (its stub is ``...``)."""

    def register(fn):
        if exercise_id in _REGISTRY:
            raise ValueError(f"exercise {exercise_id} is registered twice")
        _REGISTRY[exercise_id] = fn
        if pass_answers:
            _PASS_ANSWERS.add(exercise_id)
        return fn

    return register


def before_running(exercise_id: str):
    """Register the decorated function as the test ``ready(exercise_id, *answers)`` runs
    before the cell uses the answers: it returns None, or a hint (the cell then waits)."""

    def register(fn):
        if exercise_id in _BEFORE:
            raise ValueError(f"exercise {exercise_id} has two tests before running")
        _BEFORE[exercise_id] = fn
        return fn

    return register


def check(exercise_id: str, answer, *extra) -> CheckResult:
    """Check an answer, print the verdict and return it (``.ok`` is True when right)."""
    result = _evaluate(exercise_id, answer, *extra)
    print(result)
    return result


def attempted(answer, pass_is_stub: bool = True) -> bool:
    """False while ``answer`` is still the exercise's stub (see the module docstring)."""
    if answer is ... or answer is None:
        return False
    if isinstance(answer, dict):
        return all(attempted(v, pass_is_stub) for v in answer.values())
    if isinstance(answer, list | tuple):
        return all(attempted(v, pass_is_stub) for v in answer)
    if inspect.isfunction(answer):
        return not _stub_body(answer, pass_is_stub)
    return True


def learner_source(answer, name: str) -> tuple[str | None, str | None]:
    """(the source of the learner's function ``answer``, None), or (None, a hint) when it is
    not a function whose code can be read (checks that run it in a fresh process need it)."""
    if not callable(answer):
        return None, f"pass your function {name} itself, not its result"
    try:
        return textwrap.dedent(inspect.getsource(answer)), None
    except (OSError, TypeError):
        return None, "define your function with `def` in a notebook cell, so its code can be read"


def course_code(fn) -> bool:
    """True when ``fn`` (or the Python function a ``tf.function`` wraps) is code of this
    package: the course's own implementation is never the learner's answer."""
    inner = getattr(fn, "python_function", fn)
    code = getattr(inner, "__code__", None)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(_PACKAGE)


def _in_package(filename: str, known: dict[str, bool]) -> bool:
    if filename not in known:
        known[filename] = Path(filename).resolve().is_relative_to(_PACKAGE)
    return known[filename]


def course_calls(fn, *args):
    """(``fn(*args)``, the names of this package's functions it ran, in order): however
    the learner's code reached them (a module attribute, a name imported earlier, a method)."""
    called: list[str] = []
    known: dict[str, bool] = {}

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and _in_package(code.co_filename, known) and code.co_name[0] != "<":
            called.append(code.co_name)  # functions and methods, not comprehensions

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(previous)
    return result, called


def cell_course_calls() -> list[str]:
    """The names of this package's functions (``check`` and ``ready`` left out) that the
    notebook cell calling the check refers to: a quick question's cell that reads the course's
    own table has not reasoned the answer out."""
    frame = sys._getframe(1)
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return []
    codes, names = [frame.f_code], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if inspect.iscode(c))
    found = []
    for name in sorted(names):
        value = frame.f_globals.get(name)
        candidates = [value]
        if inspect.ismodule(value) and value.__name__.startswith(__name__.split(".")[0]):
            candidates = [getattr(value, attr, None) for attr in sorted(names)]
        found += [
            f"{c.__module__}.{c.__name__}"
            for c in candidates
            if callable(c) and course_code(c) and c.__module__ != __name__
        ]
    return sorted(set(found))


@contextmanager
def watching(*functions):
    """Inside: calls of the package's ``functions`` made through a module of the package (as in
    ``mirrored.make_train_step(...)``) are recorded by name in the list it yields."""
    called: list[str] = []
    package = __name__.split(".")[0]
    saved = [  # every module of the package that holds fn (generated in taught/, used elsewhere)
        (module, fn.__name__, fn)
        for fn in functions
        for name, module in list(sys.modules.items())
        if name.split(".")[0] == package and getattr(module, fn.__name__, None) is fn
    ]

    def spy(fn):
        def recorded(*args, **kwargs):
            called.append(fn.__name__)
            return fn(*args, **kwargs)

        return recorded

    for module, name, fn in saved:
        setattr(module, name, spy(fn))
    try:
        yield called
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


def ready(exercise_id: str, *answers) -> bool:
    """True when every answer is attempted and the exercise's test before running (if it has
    one) finds no mistake in them; otherwise say why the cell does not run the rest."""
    _REFUSED.pop(exercise_id, None)
    if not all(attempted(a) for a in answers):
        print(
            f"[waiting] exercise {exercise_id}: this cell runs once you have written your answer."
        )
        return False
    try:
        _lookup(exercise_id)  # imports the lesson's checks, and with them their tests
    except KeyError:
        pass  # no check of that name: nothing to test before running
    test = _BEFORE.get(exercise_id)
    try:
        hint = test(*answers) if test else None
    except Exception as err:  # a learner's answer can fail in any way; say how
        hint = f"trying your answer raised {type(err).__name__}: {err}"
    if hint is None:
        return True
    _REFUSED[exercise_id] = str(hint)
    print(CheckResult(exercise_id, WRONG, f"{hint} (this cell did not run the rest)"))
    return False


def _stub_body(fn, pass_is_stub: bool = True) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False  # no source to read (a lambda in a string, a built-in): assume written
    defs = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == fn.__name__
    ]
    if not defs:  # a lambda: its expression is the answer
        return False
    for i, node in enumerate(defs[0].body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ellipsis = isinstance(node, ast.Expr) and getattr(node.value, "value", 0) is ...
        returns_none = isinstance(node, ast.Return) and (
            node.value is None or getattr(node.value, "value", 0) is None
        )
        written_pass = isinstance(node, ast.Pass) and not pass_is_stub
        if written_pass or not (
            docstring or ellipsis or returns_none or isinstance(node, ast.Pass)
        ):
            return False
    return True


def _is_stub(value) -> bool:
    """An earlier answer still its stub (containers are not looked into: parts may be None)."""
    return value is ... or value is None or (inspect.isfunction(value) and _stub_body(value))


def _evaluate(exercise_id: str, answer, *extra) -> CheckResult:
    fn = _lookup(exercise_id)
    if not attempted(answer, pass_is_stub=exercise_id not in _PASS_ANSWERS):
        return CheckResult(exercise_id, NOT_ATTEMPTED, "replace each `...` with your answer.")
    if exercise_id in _REFUSED:  # ready() found a mistake: this cell's run was not made
        return CheckResult(exercise_id, WRONG, _REFUSED[exercise_id])
    if any(_is_stub(a) for a in extra):  # it needs an earlier answer that is still a stub
        return CheckResult(
            exercise_id, NOT_ATTEMPTED, "waiting for an earlier exercise: finish that one first."
        )
    try:
        hint = fn(answer, *extra)
    except Exception as err:  # a learner's answer can fail in any way; say how
        hint = f"checking your answer raised {type(err).__name__}: {err}"
    if hint is None:
        return CheckResult(exercise_id, RIGHT, "well done.")
    return CheckResult(exercise_id, WRONG, str(hint))


def _lookup(exercise_id: str):
    lesson, _, number = exercise_id.partition(".")
    if not (lesson.isdigit() and number):
        raise ValueError(f"exercise ids look like '01.2', got {exercise_id!r}")
    try:
        importlib.import_module(f"{__name__}.lesson{lesson}")
    except ModuleNotFoundError:
        raise KeyError(f"no checks exist for lesson {lesson}") from None
    if exercise_id not in _REGISTRY:
        known = sorted(k for k in _REGISTRY if k.startswith(lesson + "."))
        raise KeyError(f"no check named {exercise_id!r}; lesson {lesson} has {known}")
    return _REGISTRY[exercise_id]
