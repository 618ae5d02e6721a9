"""What every subcommand shares: the Typer apps, the root options, the exit-2 one-line
error handling (:class:`_Group`) and the output helpers (text tables, ``--json``)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import math
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from .. import units
from .._limits import (
    LIMITS,
    check_limits,
    choice_names,
    comma_count_refusal,
    name_fields,
    option_name,
    parse_count_option,
    validation_parts,
)

EXIT_USAGE = 2
"""Exit code for bad input of any kind (click's own code for usage errors)."""


# --- error handling: one line, exit 2 ----------------------------------------------------------
def _one_line(exc: BaseException, options: Callable[[str], str | None] | None = None) -> str:
    """A single-line message for an exception (pydantic's multi-error text joined with '; ').

    ``options`` maps a library field to the CLI option the user typed (None: not an option):
    given, each error names that option instead of the field (:func:`name_options`), and a
    pydantic error drops the model's title. The names the library marks inside the message
    (`` `usd_per_gpu_hour` ``) are said as the command being run spells them, either way
    (:func:`cli_words`; ``options`` renames only the refused field in front)."""
    errors = getattr(exc, "errors", None)
    # pydantic's ValidationError, or ours that subclass it (Scenario's one-line ScenarioError)
    if callable(errors) and any(c.__name__ == "ValidationError" for c in type(exc).__mro__):
        try:
            parts = [
                name_options(text, options) if options is not None else text
                for text in validation_parts(exc)
            ]
            title = "" if options is not None else f"{getattr(exc, 'title', 'input')}: "
            return cli_words(title + "; ".join(parts))
        except Exception:  # noqa: BLE001  (fall back to the plain text)
            pass
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(text.split())
    return cli_words(name_options(text, options) if options is not None else text)


#: The refusal of a cluster preset and a link bandwidth together (`collective`, `step`): the two
#: roads a command prices on, said once for both.
CLUSTER_OR_LINK = "give either --cluster (with --nodes or --ranks) or --ranks and --bandwidth"


#: API names the library marks in a message (:data:`costmodel._limits.FIELD_MARK`) that are no
#: option of the command being run, in the CLI's words: what the CLI does for that name.
CLI_NAMES: dict[str, str] = {
    # ScenarioResult's DOES NOT FIT note: Scenario.fit_suggestions is scenario's --fit
    "fit_suggestions": "`costmodel scenario --fit`",
    # predict's model 'calibrated' without a calibration: what writes a calibration preset
    "calibrate": "costmodel calibrate ... --cluster NAME",
    # a sweep's algorithm='all' under model=calibrated: the one-cluster listing that lists a
    # calibration's fits
    "predict_all_algorithms": "costmodel collective OP --cluster NAME --model calibrated --algorithm all",
    # validation.compare / calibrate: the rows' calibration compared (no base cluster)
    "calibrated_predictor": "validate compare --calibration FILE",
}

#: The API calls a library message names in backquotes where the CLI has a command that does
#: the same (`` `cm.arch_names()` ``: the architecture presets), said as that command, and the
#: library's words for a run only the CLI launches (the torch job), said as its command line;
#: applied before :data:`CLI_NAMES` (these are no field: :data:`costmodel._limits.FIELD_MARK`
#: leaves them).
CLI_WORDS: dict[str, str] = {
    # presets.names(kind='price'): both lists are one command's (longer phrases first)
    "`cm.price_names()`, `cm.arch_names()`": "`costmodel archs`",
    "`cm.arch_names()`": "`costmodel archs`",
    "`cm.price_names()`": "`costmodel archs`",
    "`cm.presets.names()`": "`costmodel presets list`",
    "`cm.presets.schema(kind)`": "`costmodel presets schema`",
    "`cm.reference.reference_path(ID)`": "`costmodel validate compare --reference ID`",
    # validation.calibrate / compare: the torch job, launched by `validate torch`
    "the torch job (all_reduce besides its DDP steps)": "the torch job (validate torch --ops "
    "all_reduce --ddp)",
    "rerun the torch job's DDP steps": "rerun validate torch --ddp",
    # validation.logread.read_results: CPU rows calibrated without a base cluster
    "(all_reduce; `calibrate` without `cluster`)": "(validate torch --ops all_reduce; costmodel "
    "calibrate without --cluster)",
    "(`calibrate` without `cluster`)": "(costmodel calibrate without --cluster)",
    # validation.compare.compute_faster_note: the compute job, launched by `validate compute`
    "with the compute job (costmodel.validation.compute_bench) and give it as the measured "
    "compute time": "with costmodel validate compute and give it as --compute-time",
}

_COMMAND: list[Callable[[str], str | None]] = []
"""The options of the command being run (:func:`command_options`, set by :func:`limited`): the
words :func:`cli_words` says the library's marked names in, wherever the command prints."""


def cli_words(text: str, options: Callable[[str], str | None] | None = None) -> str:
    """``text`` (a library message, note or label) with each name the library marks in it
    (`` `usd_per_gpu_hour` ``, :data:`costmodel._limits.FIELD_MARK`) said as the CLI says it:
    the option of the command being run that sets it (``options``; default: that command's,
    :func:`command_names`: its options, and its positional arguments as usage names them), else :data:`CLI_NAMES`, else the name alone (a ``--set`` key,
    a sweep column); an API call it names (:data:`CLI_WORDS`) as the command that does it.
    ``"or give `usd_per_gpu_hour`"`` is ``"or give --usd-per-gpu-hour"`` on
    ``train``.

    >>> cli_words("give them too (`tokens`, e.g. 2T)", {"tokens": "--tokens"}.get)
    'give them too (--tokens, e.g. 2T)'
    >>> cli_words("(`fit_suggestions` lists the changes)", lambda f: None)
    '(`costmodel scenario --fit` lists the changes)'
    >>> cli_words("an architecture preset (`cm.arch_names()`)", lambda f: None)
    'an architecture preset (`costmodel archs`)'
    """
    opts = options if options is not None else (_COMMAND[-1] if _COMMAND else None)
    for api, cli in CLI_WORDS.items():
        text = text.replace(api, cli)
    return name_fields(text, lambda f: (opts(f) if opts is not None else None) or CLI_NAMES.get(f))


# a message that starts with the library's name of what it refuses: "group_size: ...",
# "usd_per_gpu_hour, price: ..." or "model: 'x' is not a model"
_FIELD_PREFIX = re.compile(r"^([a-z][a-z0-9_]*(?:, [a-z][a-z0-9_]*)*)(: |=)")


def name_options(text: str, options: Callable[[str], str | None]) -> str:
    """``text`` with its leading field name(s) replaced by the option(s) that set them.

    ``"group_size: 3 does not divide the 16 ranks"`` -> ``"--group-size: 3 does not divide
    the 16 ranks"``; ``"model: 'x' is not a model"`` -> ``"--model: 'x' is not a model"``. Unchanged when
    it starts with no field, or with one ``options`` knows no option for (the library's
    answer to a field the user did not type is not renamed into one they did). A field the
    message repeats after the first (``"bucket_cap_bytes: bucket_cap_bytes: cannot parse"``)
    goes with it.
    """
    m = _FIELD_PREFIX.match(text)
    if m is None:
        return text
    fields = m.group(1).split(", ")
    opts = [options(f) for f in fields]
    if any(o is None for o in opts):
        return text
    rest = text[m.end() :]
    if m.group(2) == ": ":
        for f in fields:
            rest = rest.removeprefix(f"{f}: ")
    return ", ".join(dict.fromkeys(o for o in opts if o)) + ": " + rest


FIELD_OPTIONS: dict[str, tuple[str, ...]] = {
    "zero_stage": ("--zero",),
    "compute_time_s": ("--compute-time",),
    "measured_step_time_s": ("--step-time",),
    "step_time_s": ("--step-time",),
    "bucket_cap_bytes": ("--bucket",),
    "bucket_cap": ("--bucket",),
    "flash_attention": ("--flash",),
    "comm_contention": ("--contention",),
    "reshard_after_forward": ("--reshard",),
    "gradient_bytes_per_param": ("--gradient-bytes",),
    "bandwidth_bytes_per_s": ("--bandwidth",),
    "latency_s": ("--latency",),
    "activations_bytes": ("--activations",),
    # the real tensor list the buckets are cut from: an architecture's (ddp_step's arch=)
    "layer_param_counts": ("--arch",),
    "cuda_context_bytes": ("--cuda-context",),
    "gpu_memory_bytes": ("--gpu-memory",),
    "preset": ("--cluster",),
    # the cluster's GPU (its fp8 support, its power range, its compute fit): --cluster chose it
    "gpu": ("--cluster",),
}
"""A library field -> the options that may set it, where the option is not the field's own
name (``zero_stage`` -> ``--zero``); each command uses the first one it has."""


def _option_decls(fn: Callable[..., Any]) -> dict[str, list[str]]:
    """Each option parameter of command ``fn`` -> its declarations, first first
    (``sequence_length`` -> ``["--seq", "--sequence-length"]``; a flag's ``"--flash/--no-flash"``
    as one; short ones such as ``-s`` too)."""
    import inspect
    import typing

    from typer.models import ArgumentInfo, OptionInfo

    hints = typing.get_type_hints(fn, include_extras=True)
    out: dict[str, list[str]] = {}
    for name in inspect.signature(fn).parameters:
        metas = getattr(hints.get(name), "__metadata__", ())
        if any(isinstance(m, ArgumentInfo) for m in metas):
            continue
        decls: list[str] = []
        for m in metas:
            if isinstance(m, OptionInfo):
                if isinstance(m.default, str) and m.default.startswith("-"):
                    decls.append(m.default)
                decls.extend(m.param_decls or ())
        out[name] = decls
    return out


_ARGV: list[str] = []
"""The arguments of the command line being run (:meth:`_Group.main`): which spelling of an
option the user typed (``--sequence-length`` or ``--seq``), for :func:`as_typed`."""


def as_typed(text: str, spellings: dict[str, list[str]], argv: Sequence[str]) -> str:
    """``text`` with each option named as the user typed it: an error of ``--seq`` typed as
    ``--sequence-length 0`` says ``--sequence-length: ...`` (the message names the first
    spelling; ``spellings`` maps it to all of them). An option typed under several spellings
    is named as typed last (the value click keeps).

    >>> as_typed("--seq: must be 1..", {"--seq": ["--seq", "--sequence-length"]},
    ...          ["memory", "--sequence-length=0"])
    '--sequence-length: must be 1..'
    """
    for first, names in spellings.items():
        typed = [
            a.split("=", 1)[0] for a in argv if a.startswith("-") and a.split("=", 1)[0] in names
        ]
        if typed and typed[-1] != first:
            text = re.sub(rf"(?<![\w-]){re.escape(first)}(?![\w-])", typed[-1], text)
    return text


def command_options(fn: Callable[..., Any]) -> Callable[[str], str | None]:
    """The option of command ``fn`` that sets a library field, or None: the field's own
    parameter (``group_size`` -> ``--group-size``), an option spelled as the field
    (``sequence_length`` -> ``--sequence-length``, another name of ``--seq``) or one of
    :data:`FIELD_OPTIONS`; each named by the command's first spelling of it (``--seq``)."""

    from .._limits import option_name

    first: dict[str, str] = {}  # a parameter or any of its spellings -> its first spelling
    for name, decls in _option_decls(fn).items():
        parts = [part for d in decls for part in d.split("/")]
        spellings = [d for d in parts if d.startswith("--")] or [option_name(name)]
        first[name] = spellings[0]
        for sp in spellings:
            first.setdefault(sp, spellings[0])

    def option(field: str) -> str | None:
        if field in first:
            return first[field]
        for sp in (option_name(field), *FIELD_OPTIONS.get(field, ())):
            if sp in first:
                return first[sp]
        return None

    return option


def command_arguments(fn: Callable[..., Any]) -> dict[str, str]:
    """Each positional argument of command ``fn`` -> its name on the usage line (its metavar,
    ``op`` -> ``OP``): what a refusal of it says in front (``OP: unknown collective 'foo'``)
    where the library says its field (``op: ...``)."""
    import inspect
    import typing

    from typer.models import ArgumentInfo

    hints = typing.get_type_hints(fn, include_extras=True)
    out: dict[str, str] = {}
    for name in inspect.signature(fn).parameters:
        for m in getattr(hints.get(name), "__metadata__", ()):
            if isinstance(m, ArgumentInfo):
                out[name] = m.metavar or name.upper()
    return out


def command_names(fn: Callable[..., Any]) -> Callable[[str], str | None]:
    """What command ``fn`` calls a library field: the option that sets it
    (:func:`command_options`), else the positional argument that gives it, as its usage line
    names it (:func:`command_arguments`: ``op`` -> ``OP``); None for neither."""
    options = command_options(fn)
    arguments = command_arguments(fn)

    def name(field: str) -> str | None:
        return options(field) or arguments.get(field)

    return name


def _exception_modules() -> list[Any]:
    """click's exception modules: typer >= 0.20 vendors click as ``typer._click``."""
    mods = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mods.append(importlib.import_module(name))
        except ImportError:
            continue
    return mods


_EXC = _exception_modules()
_CLICK_ERRORS = tuple(m.ClickException for m in _EXC)
_EXITS = (typer.Exit, *(getattr(m, "Exit", typer.Exit) for m in _EXC))
_ABORTS = (typer.Abort, KeyboardInterrupt, *(getattr(m, "Abort", typer.Abort) for m in _EXC))
_NO_ARGS = tuple(m.NoArgsIsHelpError for m in _EXC if hasattr(m, "NoArgsIsHelpError"))


def _typed_value(opts: Sequence[str], argv: Sequence[str]) -> tuple[str, str] | None:
    """``(option, value)`` as typed last on the command line for an option spelled ``opts``
    (``--nodes 1e3`` or ``--nodes=1e3``), None if it is not there.

    >>> _typed_value(["--micro-batch", "--local-batch"], ["step", "--local-batch", "1e6"])
    ('--local-batch', '1e6')
    """
    found = None
    for i, a in enumerate(argv):
        name, eq, value = a.partition("=")
        if name in opts and eq:
            found = (name, value)
        elif a in opts and i + 1 < len(argv):
            found = (a, argv[i + 1])
    return found


def _limited_option_line(exc: Exception) -> str | None:
    """``--OPTION: must be RULE, got VALUE`` for a value click could not read as the option's
    type (``--nodes 1e3``, ``--micro-batch 2.5``), when the option has a limit (``LIMITS``):
    the range every other refusal of that option says, not click's bare "Input should be a
    valid integer"; None for anything else."""
    param = getattr(exc, "param", None)
    name = getattr(param, "name", None)
    opts = getattr(param, "opts", None)
    if name == "power_limit_w" and opts and (typed := _typed_value(opts, _ARGV)) is not None:
        from ..hardware import power_limit_text_refusal  # its range is its GPU's: no LIMITS

        return str(power_limit_text_refusal(typed[0], typed[1]))
    if name not in LIMITS or not opts or not getattr(param, "param_type_name", "") == "option":
        return None
    typed = _typed_value(opts, _ARGV)
    if typed is None:
        return None
    if LIMITS[name].whole:  # a count option: its limit's words, with the grammar's reason for
        try:  # text in no form of a count ("1_000": digits, an exponent or a suffix k, M, G)
            if (one := comma_count_refusal(typed[0], name, typed[1])) is not None:
                raise one  # '1,000' given to a one-number option: 1000, not a list
            LIMITS[name].check(typed[0], typed[1])
        except ValueError as refused:
            return str(refused)
    return f"{typed[0]}: must be {LIMITS[name].rule}, got {typed[1]!r}"


def _is_path_option(hint: Any) -> bool:
    """Whether a command parameter's annotation is a path (``Path``, ``Path | None``)."""
    import typing

    args = typing.get_args(hint)
    base = args[0] if args else hint
    return base is Path or (
        isinstance(base, types.UnionType) and {*typing.get_args(base)} == {Path, type(None)}
    )


def blank_path_refusal(
    values: dict[str, Any],
    paths: dict[str, list[str]],
    labels: Callable[[str], str | None],
    argv: Sequence[str],
) -> ValueError | None:
    """The refusal of a path typed empty or blank, None if there is none. click reads ``''`` as
    ``Path('.')``, the working folder, so ``-o "$OUT"`` with ``OUT`` unset wrote nccl-tests' rows
    there and ``validate compare ''`` compared every log in it. ``paths``: each path parameter
    -> its option spellings (empty for a positional argument, whose typed text is told from the
    command line: ``'.'`` is the working folder only where some word typed is one).

    >>> str(blank_path_refusal({"output": Path("")}, {"output": ["--output", "-o"]},
    ...     lambda f: "--output", ["sweep", "-o", ""]))
    "--output: '' is no path; give a file or folder name (empty is not read as the working folder '.')"
    """
    for name, spellings in paths.items():
        value = values.get(name)
        # only '' (read as '.') or blank text can have been typed blank
        if not isinstance(value, Path) or (value != Path(".") and str(value).strip()):
            continue
        if spellings:
            typed = _typed_value(spellings, argv)
            text = typed[1] if typed is not None else None
        elif value == Path(".") and not any(a.strip() and Path(a) == Path(".") for a in argv):
            text = ""
        else:
            text = str(value)
        if text is not None and not text.strip():
            label = labels(name) or (spellings[0] if spellings else name.upper())
            return ValueError(
                f"{label}: {text!r} is no path; give a file or folder name (empty is not read "
                "as the working folder '.')"
            )
    return None


def home_expanded(values: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """``values`` with each path parameter named in ``paths`` that starts with ``~`` expanded to
    the home folder (:meth:`pathlib.Path.expanduser`), as the shell expands it unquoted: ``-o
    '~/x.csv'`` (quoted, or a ``~`` in a script's variable) was refused as "folder '~' does not
    exist". One rule for every path a command reads or writes (``-o``, ``--output``,
    ``--report``, a file argument). A ``~user`` that names no user is left as typed.

    >>> out = home_expanded({"output": Path("~/x.csv"), "n": 1}, ["output"])
    >>> out["output"] == Path.home() / "x.csv", out["n"]
    (True, 1)
    """

    def expanded(value: Any) -> Any:
        if isinstance(value, Path) and str(value).startswith("~"):
            try:
                return value.expanduser()
            except RuntimeError:  # ~nosuchuser: no home to expand to; refused where it is used
                return value
        return value

    return {k: expanded(v) if k in paths else v for k, v in values.items()}


def _is_int_option(hint: Any) -> bool:
    """Whether a command parameter's annotation is an integer option (``int``, ``int | None``)."""
    import typing

    args = typing.get_args(hint)
    base = args[0] if args else hint
    return base is int or (
        isinstance(base, types.UnionType) and {*typing.get_args(base)} <= {int, type(None)}
    )


#: Options a newcomer types for the GPU count, which every command spells as --ranks (or
#: --nodes of --cluster): click refused them with an unrelated guess ("No such option: --gpus
#: (Possible options: --vs)").
GPU_COUNT_SPELLINGS = ("--gpus", "--num-gpus", "--ngpus", "--n-gpus", "--gpu-count", "--world-size")
#: Options typed for the GPU model, which is the --cluster preset's ("--gpu (Possible options:
#: --mfu)").
GPU_MODEL_SPELLINGS = ("--gpu", "--gpu-type", "--gpu-model")
#: Options typed for SHARP (in-network reduction), which `collective` spells as NCCL does,
#: --nvls (NVLink SHARP, NCCL_NVLS_ENABLE) and --collnet (InfiniBand SHARP,
#: NCCL_COLLNET_ENABLE), and every other command takes from the --cluster preset: click refused
#: them with "(Possible options: --help)".
SHARP_SPELLINGS = ("--sharp", "--no-sharp", "--nvls-sharp", "--ib-sharp", "--in-network")


def _other_spelling_line(exc: Exception) -> str | None:
    """The line for an option a newcomer types that this command spells another way: the GPU
    count (:data:`GPU_COUNT_SPELLINGS`: ``--ranks``, or ``--nodes`` of ``--cluster``) and the
    GPU model (:data:`GPU_MODEL_SPELLINGS`: the ``--cluster`` preset's), worded from the options
    the command has; ``None`` for any other option, or a command without those options."""
    name = str(getattr(exc, "option_name", None))
    ctx = getattr(exc, "ctx", None)
    params = getattr(getattr(ctx, "command", None), "params", None) or []
    has = {o for p in params for o in getattr(p, "opts", ())}
    hint = None
    if name in GPU_COUNT_SPELLINGS and "--nodes" in has and "--cluster" in has:
        hint = (
            "the GPU count is --ranks N (with --cluster: one node's slice or whole nodes of it, "
            "--ranks 64 on dgx-h100 is --nodes 8) or --nodes N of --cluster"
            if "--ranks" in has
            else "the GPU count is --nodes N of --cluster (64 GPUs of dgx-h100: --nodes 8), "
            "--gpus-per-node for a slice"
        )
    elif name in GPU_MODEL_SPELLINGS and "--cluster" in has:
        hint = (
            "the GPU is the --cluster preset's (B200s: --cluster dgx-b200; `costmodel presets "
            "list` names each cluster's GPU)"
            + (", or --gpu-memory for a card's memory alone" if "--gpu-memory" in has else "")
        )
    elif name in SHARP_SPELLINGS and "--nvls" in has:
        hint = (
            "NVLink SHARP is --nvls / --no-nvls (NCCL_NVLS_ENABLE=1/0), InfiniBand SHARP "
            "--collnet (NCCL_COLLNET_ENABLE=1)"
        )
    elif name in SHARP_SPELLINGS and "--cluster" in has:
        hint = (
            "SHARP is the --cluster preset's (NVLink SHARP where its GPUs have it); `costmodel "
            "collective --nvls / --collnet` sets it for one collective"
        )
    if hint is None:
        return None
    return f"No such option: {name}; {hint}. See '{ctx.command_path} --help'."  # type: ignore[union-attr]


def _usage_line(exc: Exception) -> str:
    limited_line = _limited_option_line(exc)
    if limited_line is not None:
        return limited_line
    other = _other_spelling_line(exc)
    if other is not None:
        return other
    msg = exc.format_message()  # type: ignore[attr-defined]
    # click's closest match to an unknown option can be only --help, a guess that helps nobody
    msg = msg.replace(" (Possible options: --help)", "")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and getattr(exc, "exit_code", 1) == 2:
        command = ctx.command
        if hasattr(command, "list_commands") and "command" in msg.lower():
            msg += f" Allowed: {', '.join(sorted(command.list_commands(ctx)))}."
        msg = msg.rstrip()
        msg += ("" if msg.endswith((".", "?", "!")) else ".") + f" See '{ctx.command_path} --help'."
    return " ".join(msg.split())


_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    LookupError,
    OSError,
    TypeError,
    ImportError,
)


_PENDING_WARNINGS: list[str] = []
"""Warnings about an input that was answered, printed once the command has succeeded (a refusal
stays the one line on stderr)."""


_SAID_WARNINGS: list[str] = []
"""Warnings already said on stderr while the command ran (:func:`say_warning`, and the Python
warnings the entry point turns into ``costmodel: warning:`` lines), kept for ``--json``."""


def warn_on_success(text: str) -> None:
    """``costmodel: warning: TEXT`` on stderr after the command's answer, only if it answers
    (the library's marked names in the command's words, :func:`cli_words`)."""
    _PENDING_WARNINGS.append(cli_words(text))


def say_warning(text: str) -> None:
    """``costmodel: warning: TEXT`` on stderr now (before a long run, where waiting for the
    answer would hide it), kept for ``--json``'s ``"warnings"`` too (:func:`json_warnings`)."""
    said_warning(text)
    typer.echo(f"costmodel: warning: {cli_words(text)}", err=True)


def said_warning(text: str) -> None:
    """Keep a warning line another road put on stderr (the entry point's hook for Python
    warnings) for ``--json``'s ``"warnings"``."""
    _SAID_WARNINGS.append(cli_words(text))


def json_warnings(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its ``"warnings"`` key: every warning the command says on stderr, so a
    ``--json`` reader sees them without reading stderr (a list of strings, ``[]`` when none).

    The one road for every command's JSON object (:func:`_print_json` calls it): the warnings a
    command put in ``data["warnings"]`` itself (``validate compare``'s notices) come first, then
    those said on stderr while it ran (:func:`say_warning`, Python warnings) and those said after
    its answer (:func:`warn_on_success`), each once. The stderr lines stay as they were: a
    human at a terminal reads them there. A JSON *array* (``sweep --json`` streaming rows,
    ``fabrics``, ``presets list``, ``nccl-tests run --dry-run``) has no key to hold them and
    stays an array: a sweep's rows carry their own ``error``."""
    own = [str(w) for w in data.get("warnings") or []]
    new = [w for w in (*_SAID_WARNINGS, *_PENDING_WARNINGS) if w not in own]
    return {**data, "warnings": own + list(dict.fromkeys(new))}


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has gone (``poll`` reports an error on it), so
    that a ``BrokenPipeError`` from elsewhere (a pipe to a child process) is not taken for it."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):
        return False
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def _quiet_stdout() -> None:
    """Point stdout at the null device once its reader has gone (``costmodel archs | head -1``),
    so that no later write or the interpreter's final flush raises ``BrokenPipeError`` again
    (the way Python's documentation of SIGPIPE recommends). A stdout without a file descriptor
    (a test runner's buffer) is left as it is."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


# --- a number typed without its unit -------------------------------------------------------------
# the rule and its words live in units (bare_number_message), shared with the API's
# Scenario.with_changes; here they only become `costmodel: warning:` lines after the answer


def bare_bytes_warning(typed: str, text: Any, meant: str) -> None:
    """``costmodel: warning: ...`` after the answer when a size was typed with no unit and is
    under 1 MiB: a bare number is bytes (``--bucket 25`` is 25 B, every tensor its own bucket;
    ``--gpu-memory 80`` an 80-byte card), which is answered, as the unit grammar says, but is
    seldom what was meant. ``typed`` is the option as the user typed it (``--bucket``);
    ``meant`` the unit most likely meant (``MiB``). Words: :func:`units.bare_number_message`."""
    message = units.bare_number_message(typed, text, "bytes", meant)
    if message is not None:
        warn_on_success(message)


def bare_seconds_warning(
    typed: str, text: Any, meant: str = "ms", *, kind: str = "seconds"
) -> None:
    """The duration counterpart of :func:`bare_bytes_warning`: a duration typed with no unit
    is seconds (``--compute-time 400`` is 400 s), answered, with a warning from
    :data:`units.BARE_SECONDS_FROM` seconds on (``400`` is more often 400 ms meant); a latency
    (``kind="latency"``, ``--latency 5``) from :data:`units.BARE_LATENCY_FROM` on."""
    message = units.bare_number_message(typed, text, kind, meant)
    if message is not None:
        warn_on_success(message)


def relay_bare_number_warnings(option: str, make: Callable[[], Any]) -> Any:
    """``make()``, the :class:`units.BareNumberWarning` s it raises (the API's words for a
    number typed without its unit, ``compute_time=400 is 400 s ...``) said after the answer as
    ``costmodel: warning: OPTION compute_time=400 is ...`` rather than as Python warnings."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", units.BareNumberWarning)
        result = make()
    for w in caught:
        if issubclass(w.category, units.BareNumberWarning):
            warn_on_success(f"{option} {w.message}")
        else:  # any other warning goes on as it came
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def _say_warnings() -> None:
    """The warnings kept for after the answer (:func:`warn_on_success`), on stderr. A reader
    that has gone by then (``costmodel step --bucket 50 2>&1 | head -3``: head took its lines
    and left) ends them quietly, as a closed stdout ends a command (:meth:`_Group.invoke`): the
    answer was given, so the exit status stays the command's (it was 1, from a traceback
    written to the closed pipe)."""
    for text in _PENDING_WARNINGS:
        try:
            typer.echo(f"costmodel: warning: {text}", err=True)
        except BrokenPipeError:
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stderr.fileno())
                os.close(devnull)
            except (AttributeError, OSError, ValueError):
                pass
            return


def repeated_option_refusal(command: Any, args: Sequence[str]) -> str | None:
    """The refusal of an option given twice with two values on one command line, or None.

    click keeps the last value of an option that takes one, so ``--nodes 2 --nodes 4`` priced
    4 nodes and ``scenario --vs nodes=2 --vs zero_stage=3`` compared only ZeRO-3, each
    silently; ``--no-sync --sync`` kept ``--sync``. A repeatable option (``--size``, ``--set``)
    is a list and not checked; the same value twice (``--json --json``) asks one thing. The
    spellings of one option (``--seq`` and ``--sequence-length``, a flag's ``--x/--no-x``)
    are one option. ``args`` are the command's own arguments, as click will parse them.

    >>> import click
    >>> cmd = click.Command("c", params=[click.Option(["--nodes", "-n"], type=int),
    ...     click.Option(["--sync/--no-sync"])])
    >>> repeated_option_refusal(cmd, ["--nodes", "2", "-n4"])
    '--nodes/-n: given twice (2, then 4); give it once'
    >>> repeated_option_refusal(cmd, ["--no-sync", "--sync"])
    '--no-sync, --sync: given both; give one of them'
    >>> repeated_option_refusal(cmd, ["--nodes=2", "--nodes", "2"]) is None
    True
    """
    names: dict[str, tuple[Any, bool]] = {}  # spelling -> (option, the flag's value if a flag)
    for param in getattr(command, "params", ()):
        # an option of click's or of the click that typer carries (not one class)
        if getattr(param, "param_type_name", "") != "option" or param.multiple or param.count:
            continue
        for name in param.opts:
            names[name] = (param, True)
        for name in param.secondary_opts:
            names[name] = (param, False)
    head = list(args)[: list(args).index("--")] if "--" in args else list(args)
    if "-h" in head or "--help" in head:
        return None  # the help is asked for: it answers, whatever else is typed
    seen: dict[int, tuple[str, str]] = {}  # id(option) -> (the spelling typed, its value)
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        if not token.startswith("-") or token in ("-", "-h", "--help"):
            continue
        spelling, value = token, None
        if token.startswith("--") and "=" in token:
            spelling, value = token.split("=", 1)
        elif not token.startswith("--") and token[:2] in names and len(token) > 2:
            spelling, value = token[:2], token[2:]  # -ofile.csv
        if spelling not in names:
            continue
        param, flag_value = names[spelling]
        if param.is_flag:
            value = str(flag_value)
        elif value is None:
            if i >= len(args):
                break  # click says the value is missing
            value = args[i]
            i += 1
        before = seen.get(id(param))
        if before is None:
            seen[id(param)] = (spelling, value)
            continue
        if before[1] == value:
            continue
        if param.is_flag:
            return f"{before[0]}, {spelling}: given both; give one of them"
        name = spelling if spelling == before[0] else f"{before[0]}/{spelling}"
        hint = "give it once"
        if spelling == "--vs":  # scenario's changes: all of them in the one --vs
            hint = f"give every change in one --vs: --vs '{before[1]},{value}'"
        return f"{name}: given twice ({before[1]}, then {value}); {hint}"
    return None


class _CommandsGroup(TyperGroup):
    """A group whose commands refuse an option given twice with two values
    (:func:`repeated_option_refusal`): the top level and ``presets``, ``validate``,
    ``validate nccl-tests``."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # an option given twice with two values is refused before click keeps the last one
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not hasattr(command, "list_commands"):
            refusal = repeated_option_refusal(command, rest)
            if refusal is not None:
                raise ValueError(refusal)
        return name, command, rest


class _Group(_CommandsGroup):
    """The top-level group: turns every usage or input error into exit 2 and one line, and a
    reader that stopped reading (a closed pipe) into a quiet exit 0."""

    def invoke(self, ctx: Any) -> Any:
        # every command runs inside this call: a write to a stdout whose reader has gone
        # (`costmodel archs | head -1`) ends the command quietly with exit 0, as `head` asked
        # for no more; click's own handling would exit 1 and the shell's pipefail fail
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            if not _stdout_gone():
                raise
            _quiet_stdout()
            raise typer.Exit(0) from None

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        # `costmodel --help | head -1`: the top-level help is printed while the arguments
        # are parsed, before invoke
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            if not _stdout_gone():
                raise
            _quiet_stdout()
            raise typer.Exit(0) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        code: int | None = 0
        _ARGV[:] = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(
                args,
                prog_name or "costmodel",
                complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
            code = rv if isinstance(rv, int) else 0
            _say_warnings()
        except _EXITS as exc:
            code = getattr(exc, "exit_code", 0)
        except _NO_ARGS as exc:  # bare `costmodel` or `costmodel presets`: show the help
            try:
                typer.echo(exc.format_message())
            except BrokenPipeError:  # `costmodel | head -1`: quietly, as invoke does
                _quiet_stdout()
            code = 0
        except _CLICK_ERRORS as exc:
            typer.echo(f"costmodel: error: {_usage_line(exc)}", err=True)
            code = getattr(exc, "exit_code", EXIT_USAGE)
        except _ABORTS:
            typer.echo("costmodel: interrupted", err=True)
            code = 130
        except _INPUT_ERRORS as exc:
            typer.echo(f"costmodel: error: {_one_line(exc)}", err=True)
            code = EXIT_USAGE
        finally:
            _PENDING_WARNINGS.clear()
            _SAID_WARNINGS.clear()
            _COMMAND.clear()
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    rich_markup_mode=None,
    cls=_Group,
    name="costmodel",
    help="Predict what data-parallel training costs on a GPU cluster, and check it against "
    "measurements. Sizes and rates take units: 14GB, 1.5GiB, 400Gb/s, 50GB/s, 5us.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
presets_app = typer.Typer(
    rich_markup_mode=None,
    cls=_CommandsGroup,
    help="List and show hardware presets, and the schema of a preset file.",
    no_args_is_help=True,
)
validate_app = typer.Typer(
    rich_markup_mode=None,
    cls=_CommandsGroup,
    help="Measure (nccl-tests, torch) and compare with the model.",
    no_args_is_help=True,
)
nccl_tests_app = typer.Typer(
    rich_markup_mode=None,
    cls=_CommandsGroup,
    help="Run nccl-tests binaries and keep their parsed rows.",
    no_args_is_help=True,
)
app.add_typer(presets_app, name="presets")
app.add_typer(validate_app, name="validate")
validate_app.add_typer(nccl_tests_app, name="nccl-tests")


def _root(
    ctx: typer.Context,
    presets_dir: Annotated[
        # text, not Path: an empty value would be Path('.'), the working folder, read as presets
        list[str] | None,
        typer.Option(
            "--presets-dir",
            metavar="<path>",  # one folder, repeatable: not Python's list[Path]
            help="Extra folder of preset TOML files (repeatable); overrides "
            "shipped presets of the same name, like COSTMODEL_PRESETS.",
        ),
    ] = None,
) -> None:
    """Predict what data-parallel training costs on a GPU cluster.

    Example: costmodel collective all_reduce --size 14GB --ranks 64 --bandwidth 50GB/s
    """
    if presets_dir:
        for d in presets_dir:
            if not d.strip() or not Path(d).is_dir():
                raise ValueError(
                    f"--presets-dir: {d!r} is not a folder; give a folder of preset TOML files"
                )
        before = os.environ.get("COSTMODEL_PRESETS")
        paths = [str(d) for d in presets_dir] + ([before] if before else [])
        os.environ["COSTMODEL_PRESETS"] = os.pathsep.join(paths)
        # the folders are this command's: called in-process (costmodel.cli.main, a test's
        # CliRunner), the next command starts from the environment it was given
        ctx.call_on_close(lambda: _restore_env("COSTMODEL_PRESETS", before))


def _restore_env(name: str, value: str | None) -> None:
    """``os.environ[name]`` back to ``value`` (None: unset)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


# --- output helpers ---------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if type(value).__name__ == "NAType":  # pandas' missing value (an Int64 sweep column's)
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if hasattr(value, "model_dump"):
        return _jsonable(value.model_dump(mode="json"))
    if isinstance(value, Path):
        return str(value)
    return value


def _worded(value: Any, before: dict[str, str] | None = None) -> Any:
    """Every string in JSON-ready ``value`` in the CLI's words (:func:`cli_words`): a note or
    label the library wrote names the command's options in ``--json`` as in the text. ``before``:
    phrases replaced first, where this command says a name otherwise than :data:`CLI_NAMES`
    (``scenario --vs``, which refuses ``--fit``)."""
    if isinstance(value, str):
        for old, new in (before or {}).items():
            value = value.replace(old, new)
        return cli_words(value)
    if isinstance(value, dict):
        return {k: _worded(v, before) for k, v in value.items()}
    if isinstance(value, list):
        return [_worded(v, before) for v in value]
    return value


def _print_json(data: Any, before: dict[str, str] | None = None) -> None:
    """A command's ``--json`` answer on stdout; an object gets its ``"warnings"``
    (:func:`json_warnings`)."""
    if isinstance(data, dict):
        data = json_warnings(data)
    typer.echo(json.dumps(_worded(_jsonable(data), before), indent=2))


def _records(df: Any) -> list[dict[str, Any]]:
    return [_jsonable(r) for r in df.to_dict(orient="records")]


_FORMATTERS: dict[str, Callable[[float], str]] = {
    "_bytes_per_s": units.format_rate,
    "_GBps": lambda v: units.format_rate(v * 1e9),
    "_GB": lambda v: units.format_bytes(v * 1e9),
    "_bytes": units.format_bytes,
    "_rel_error": lambda v: f"{100 * v:+.1f}%",
    # |ln(predicted / measured)|: a pure number, no percentage (0.095 is a factor 1.1 either
    # way); three decimals, as the HTML report prints it (it printed six, 0.095310)
    "_log_ratio": lambda v: f"{v:.3f}",
    "_s": units.format_duration,
}
"""Column-name suffix -> formatter for text output (first match wins; order matters)."""

#: suffixes that stay in the column's name (the others are said by the formatted value's unit)
_KEPT_SUFFIXES = ("_rel_error", "_log_ratio")


def _percent(v: float) -> str:
    return f"{100 * v:.1f}%"


#: the columns that say a message size, said in binary prefixes when the sizes were typed so
SIZE_COLUMNS = ("size_bytes", "message_bytes")


def _human_frame(df: Any, binary_sizes: bool = False) -> str:
    """A DataFrame as aligned text, numbers formatted with their units from the column names.
    ``binary_sizes``: the sizes were typed in binary prefixes (:func:`units.typed_binary`), so
    the size columns (:data:`SIZE_COLUMNS`) say them back in those (``14 GiB``, not ``15 GB``)."""
    out = df.copy()
    renames = {}
    for col in out.columns:
        name, bracket = str(col), ""
        if binary_sizes and col in SIZE_COLUMNS and out[col].dtype.kind in "fiu":
            out[col] = [units.format_bytes_binary(float(v)) if v == v else "-" for v in out[col]]
            renames[col] = name.removesuffix("_bytes")
            continue
        if name.endswith("]") and "[" in name:  # "time_s[textbook]": unit before the bracket
            name, bracket = name[: name.index("[")], name[name.index("[") :]
        for suffix, fmt in _FORMATTERS.items():
            hit = ("_rel_error" in name) if suffix == "_rel_error" else name.endswith(suffix)
            if hit and out[col].dtype.kind in "fiu":
                if suffix == "_rel_error" and ("abs" in name or "rms" in name):
                    fmt = _percent  # noqa: PLW2901  (a magnitude: no sign)
                out[col] = [fmt(float(v)) if v == v else "-" for v in out[col]]
                if suffix not in _KEPT_SUFFIXES:
                    renames[col] = name[: -len(suffix)] + bracket
                break
        else:
            if col == "params" and out[col].dtype.kind in "fiu":
                out[col] = [units.format_count(float(v)) for v in out[col]]
            elif col.endswith("_over_nccl"):
                out[col] = [f"{v:.3g}x" for v in out[col]]
    out = out.rename(columns=renames)
    return out.to_string(index=False)


def _left_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned plain-text columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(f"{x:<{w}}" for x, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    )


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    """``key  value`` lines, the keys aligned; a value the library wrote (a compute label) in
    the command's words (:func:`cli_words`)."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {cli_words(str(v))}" for k, v in rows)


def _sizes(values: Sequence[str], name: str = "--size") -> list[int]:
    from ..sweep import parse_values

    if not values:
        raise ValueError(f"{name}: give at least one size, e.g. {name} 14GB or {name} 8B:1GB")
    out: list[int] = []
    for v in values:
        out.extend(parse_values("size", v))
    return out


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]

#: What an output file option does to a file already there (sweep, validate compare, calibrate):
#: replaced, as -o does in common tools, never half-written, never over an input it reads
REPLACED_OUTPUT = "Replaced if it exists; written atomically; never one of the command's inputs."


def _not_an_input(path: Path, option: str, *inputs: Path | None) -> None:
    """Refuse an output that is one of the files the command reads (the measured log, a
    calibration, a folder's logs): written atomically, it would replace what was read, with no
    way back. A folder given as an input (``validate compare FOLDER``, ``calibrate FOLDER``)
    reads its files as logs: each of them is an input too (not a hidden file, a results
    ``.jsonl`` or a calibration ``.toml`` beside them, which the folder's reader leaves out)."""
    if not path.exists():
        return
    for given in inputs:
        if given is None:
            continue
        if given.is_dir():
            read = (
                p
                for p in given.iterdir()
                if p.is_file()
                and not p.name.startswith(".")
                and p.suffix.lower() not in (".jsonl", ".toml")
            )
            for inside in sorted(read):
                if path.samefile(inside):
                    raise ValueError(
                        f"{option}: {str(path)!r} is a file of the folder this command reads "
                        f"({str(given)!r}); writing it would replace it; give another file "
                        "name"
                    )
            continue
        if given.is_file() and path.samefile(given):
            raise ValueError(
                f"{option}: {str(path)!r} is the file this command reads ({str(given)!r}); "
                "writing it would replace it; give another file name"
            )


@contextlib.contextmanager
def output_option(option: str) -> Iterator[None]:
    """Refusals about a file a command writes named by the option that gave it: the
    library's writers say ``output: ...`` (:mod:`costmodel.atomic`, :mod:`costmodel.sweep`),
    which :func:`limited` names ``--output``; a second file (``--report``) is named so here,
    not as the ``--output`` the user may not have typed."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        if text.startswith("output: "):
            raise ValueError(f"{option}: {text.removeprefix('output: ')}") from None
        raise


def _model_help() -> str:
    from .. import models

    answer = ", ".join(f"{m}{' (default)' if m == models.DEFAULT else ''}" for m in models.MODELS)
    return f"{answer}; reference baseline: {', '.join(models.REFERENCE_MODELS)}."


_MODEL_HELP = _model_help()


# --- one set of limits for every command ------------------------------------------------------
def limited(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A command whose options named in :data:`LIMITS` are checked before it runs, and whose
    refusals name the option the user typed rather than the library's field
    (:func:`command_options`, :func:`name_options`).

    The limits replace the options' own ``min=``/``max=`` (removed here), so a value out of
    range gets the same one-line message from every command.
    """
    import functools
    import inspect
    import typing

    hints = typing.get_type_hints(fn, include_extras=True)
    for name in LIMITS:
        for meta in getattr(hints.get(name), "__metadata__", ()):
            for attr in ("min", "max"):
                if hasattr(meta, attr):
                    setattr(meta, attr, None)
    # every integer option reads the one count grammar (1e3, 2k as 8 is read; 1_000 refused),
    # as the sweep's axes, --vs and the library's Scenario do: click's integer took only digits
    # (and Python's 1_000)
    for name, hint in hints.items():
        if _is_int_option(hint):
            for meta in hint.__metadata__:
                if hasattr(meta, "parser"):
                    meta.parser = functools.partial(parse_count_option, name)
    sig = inspect.signature(fn)
    sig = sig.replace(
        parameters=[
            p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()
        ],
        return_annotation=hints.get("return", sig.return_annotation),
    )

    options = command_options(fn)
    names = command_names(fn)  # the options, and the positional arguments as usage says them
    # an option's first spelling -> every long spelling, for those that have another (--seq
    # and --sequence-length, --zero and --zero-stage, --sizes and --size); a short one (-o)
    # is named by its long name, which says what it is
    aliases = {
        d[0]: d
        # a flag's off switch (--no-flash) is not another name: its refusal names --flash
        for d in (
            [x.split("/")[0] for x in decls if x.startswith("--")]
            for decls in _option_decls(fn).values()
        )
        if len(d) > 1
    }

    # each path parameter -> its spellings (none for a positional argument)
    decls, arguments = _option_decls(fn), command_arguments(fn)
    paths: dict[str, list[str]] = {}
    for name, hint in hints.items():
        if _is_path_option(hint):
            spellings = [p for d in decls.get(name, []) for p in d.split("/")]
            paths[name] = [] if name in arguments else spellings or [option_name(name)]

    def checked(*args: Any, **kwargs: Any) -> Any:
        if (blank := blank_path_refusal(kwargs, paths, names, _ARGV)) is not None:
            raise blank
        kwargs = home_expanded(kwargs, paths)  # -o '~/x.csv', quoted: the home folder's x.csv
        kwargs = choice_names(kwargs)  # --precision FP8 is fp8, on every command alike
        check_limits(kwargs, options)  # named as the command spells the option first
        try:
            return fn(*args, **kwargs)
        except (ValueError, LookupError) as exc:
            # a refusal from the library names its field ("group_size: ..."): name the option
            # the user typed instead (--group-size), on every command alike
            text = _one_line(exc, names)
            if text == _one_line(exc):
                raise
            raise ValueError(text) from None

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        _COMMAND[:] = [names]  # the words of everything this command prints (cli_words)
        try:
            return checked(*args, **kwargs)
        except (ValueError, LookupError) as exc:
            # ... under the spelling typed: --sequence-length 0 is not refused as --seq
            text = _one_line(exc)
            typed = as_typed(text, aliases, _ARGV)
            if typed == text:
                raise
            raise ValueError(typed) from None

    # typer reads these: the evaluated annotations whose min/max were removed above
    inner.__annotations__ = hints
    inner.__signature__ = sig  # type: ignore[attr-defined]
    return inner


# --- a cluster preset's rank count: one reading for every command ------------------------------
def option_given(option: str) -> bool:
    """Whether ``option`` (``--nodes``) was typed on the command line being run (``--nodes 1``
    or ``--nodes=1``), rather than left at its default: ``--nodes 1`` typed beside
    ``--ranks 16`` disagrees, though 1 is also the default."""
    return any(a == option or a.startswith(option + "=") for a in _ARGV)


def preset_ranks_example(ranks: int) -> str:
    """``--cluster dgx-h100 --ranks N`` where the default cluster builds ``N`` GPUs (one node's
    slice or whole nodes), else the counts it takes: the way out a refusal offers runs
    (``step`` and ``collective`` given ``--ranks`` with neither ``--bandwidth`` nor ``--cluster``)."""
    from ..scenario import Scenario

    default = str(Scenario.model_fields["cluster"].default)
    try:
        preset_ranks(default, ranks, None, None)
    except ValueError:
        from ..presets import cluster as load_cluster

        g = load_cluster(default, field="cluster").gpus_per_node
        return (
            f"--cluster {default} --ranks N, N up to {g} or a multiple of {g}; {ranks} is neither"
        )
    return f"--cluster {default} --ranks {ranks}"


def preset_ranks(
    cluster: str,
    ranks: int,
    nodes: int | None,
    gpus_per_node: int | None,
    names: tuple[str, str, str] = ("--ranks", "--nodes", "--gpus-per-node"),
) -> tuple[int, int | None]:
    """``--cluster NAME --ranks N`` of any command (``collective``, ``step``, ``scenario``,
    ``train``, ``batch``; ``memory``'s ``--ranks`` is any count sharding the state, as the
    memory sweep's ``ranks``): the nodes and GPUs per node [-] ``N`` ranks take on the preset, as the sweep's
    ``ranks`` axis takes them (:func:`costmodel.sweep.evaluate.ranks_slice`: ``N <= G`` is one
    node's slice of ``N`` GPUs, a multiple of ``G`` is ``N / G`` whole nodes, any other count
    refused naming ``--ranks``). A ``--nodes`` or ``--gpus-per-node`` also given (not None)
    must be that shape, else refused naming it; one that agrees is answered. ``names``: the
    three as the caller spells them (``scenario --vs``: ``--vs ranks``, ``--vs nodes``, ...).

    ``nodes = 1, gpus = N`` where ``N <= G``; ``nodes = N / G, gpus = G`` where ``G | N``.
    The GPUs per node come back None where they are the preset's own and ``--gpus-per-node``
    was not given: whole nodes are then read as ``--nodes`` alone reads them (a ``scenario --vs
    cluster=...`` takes the other preset's node), a slice of one node as ``--gpus-per-node``."""
    from ..presets import cluster as load_cluster
    from ..sweep.evaluate import ranks_slice

    base = load_cluster(cluster, field="cluster")
    r_name, n_name, g_name = names
    try:
        k, g = (int(a[0]) for a in ranks_slice([ranks], base.gpus_per_node, cluster))
    except ValueError as exc:
        text = cli_words(str(exc), {"ranks": r_name, "nodes": n_name}.get)
        lead = "ranks: "  # the library's name of what it refuses, said as the caller's option
        raise ValueError(
            f"{r_name}: {text.removeprefix(lead)}" if text.startswith(lead) else text
        ) from None
    for name, given, shape in ((n_name, nodes, k), (g_name, gpus_per_node, g)):
        if given is not None and given != shape:
            raise ValueError(
                f"{name}: {given} disagrees with {r_name} {ranks}, which on {cluster!r} is "
                f"{units.format_counted(k, 'node')} of {units.format_counted(g, 'GPU')}; "
                f"give {r_name} or {n_name} (with {g_name}), or both agreeing"
            )
    return k, (g if gpus_per_node is not None or g != base.gpus_per_node else None)
