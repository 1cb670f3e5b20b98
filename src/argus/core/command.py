"""Lexical analysis of an advanced command: one simple command, no shell tricks.

Argus runs an advanced command as ``bash -lc <command>``. To make the entry
module allowlist mean something, the command must be a *single* simple
command: optional ``VAR=value`` assignments, ``python3``, interpreter flags,
``-m <module>``, then arguments. Shell control operators, redirections,
command substitution and several commands are rejected — Argus already
captures stdout/stderr into the task log, so ``| tee`` is never needed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from argus.core.messages import field_error
from argus.errors import FieldError

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OVERRIDE = re.compile(r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w.\-/@]*)=(?P<value>.*)$", re.S)
_INTERPRETER_FLAGS_WITH_ARG = {"-X", "-W", "-Q"}
_INTERPRETER_FLAGS = {"-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-b", "-bb", "-I", "-P", "-q", "-v"}
_OPERATOR_CHARS = set(";&|<>()")


@dataclass
class ParsedCommand:
    """The parts of a command that admission checks."""

    tokens: list[str]
    env: dict[str, str] = field(default_factory=dict)
    interpreter: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    # key (without +/++/~ prefix) -> (prefix, value); the last occurrence wins, as in Hydra
    overrides: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Set when torchrun launches the module (``torchrun …`` or ``python3 -m torch.distributed.run …``):
    # ``module``/``args``/``overrides`` are then the inner module's, and this holds torchrun's own options.
    torchrun: TorchrunOptions | None = None
    # What makes the command as written unacceptable although its python command could still be found and
    # judged (shell operators: ``cd x && python3 -m …``): admission refuses with these and every problem of the
    # python command in the same answer, instead of one round per problem.
    problems: list[FieldError] = field(default_factory=list)


@dataclass
class TorchrunOptions:
    """torchrun's options before the module it runs (``--nproc_per_node=8 --standalone``)."""

    tokens: list[str]
    # canonical option name (``--nproc-per-node``) -> value ("" for flags); the last occurrence wins
    options: dict[str, str] = field(default_factory=dict)

    @property
    def nproc_per_node(self) -> str | None:
        return self.options.get("--nproc-per-node")

    @property
    def nnodes(self) -> str | None:
        return self.options.get("--nnodes")

    @property
    def standalone(self) -> bool:
        return "--standalone" in self.options


# torchrun's command-line (torch/distributed/run.py, get_args_parser): name -> takes a value.
# Both spellings are accepted there (--nproc-per-node / --nproc_per_node); abbreviations are not accepted here.
TORCHRUN_OPTIONS = {
    "--nnodes": True, "--nproc-per-node": True, "--rdzv-backend": True, "--rdzv-endpoint": True,
    "--rdzv-id": True, "--rdzv-conf": True, "--standalone": False, "--max-restarts": True,
    "--monitor-interval": True, "--start-method": True, "--event-log-handler": True, "--role": True,
    "--module": False, "--no-python": False, "--run-path": False, "--log-dir": True, "--redirects": True,
    "--tee": True, "--local-ranks-filter": True, "--duplicate-stdout-filters": True,
    "--duplicate-stderr-filters": True, "--node-rank": True, "--master-addr": True, "--master-port": True,
    "--local-addr": True, "--logs-specs": True, "--numa-binding": True, "--signals-to-handle": True,
    "--shutdown-timeout": True, "--virtual-local-rank": False,
}
_TORCHRUN_SHORT = {"-m": "--module", "-r": "--redirects", "-t": "--tee"}
# torchrun's console script and the module it runs (``python3 -m torch.distributed.run``).
TORCHRUN_PROGRAM = "torchrun"
TORCHRUN_MODULES = frozenset({"torch.distributed.run"})


def join_continuations(command: str) -> str:
    return re.sub(r"\\\r?\n", " ", command)


PPO_ENTRY = "verl.trainer.main_ppo"
SFT_ENTRIES = ("verl.trainer.sft_trainer", "verl.trainer.fsdp_sft_trainer")


def infer_workload(command: str) -> tuple[str, str]:
    """(workload, why) of an advanced command that names none, as the founding design's spec writes it
    (no ``workload`` field): verl's PPO entry is grpo with ``algorithm.adv_estimator=grpo``, else ppo;
    verl's SFT entries are sft; anything else (Argus's jobs, the model merger, a command that does
    not parse: admission says why) is a job."""
    parsed = parse_command(command)
    if isinstance(parsed, list):
        return "job", "the command does not parse"
    if parsed.module == PPO_ENTRY:
        est = parsed.overrides.get("algorithm.adv_estimator", ("", ""))[1].strip("'\"")
        if est == "grpo":
            return "grpo", f"{PPO_ENTRY} with algorithm.adv_estimator=grpo"
        return "ppo", f"{PPO_ENTRY}" + (f" with algorithm.adv_estimator={est}" if est else "")
    if parsed.module in SFT_ENTRIES:
        return "sft", parsed.module
    return "job", f"{parsed.module or 'the command'} is not a verl trainer"


def parse_command(command: str, fld: str = "command") -> ParsedCommand | list[FieldError]:
    """Split a command into tokens and find its interpreter, module and overrides."""
    errors: list[FieldError] = []
    joined = join_continuations(command)
    lines = [ln for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) > 1:
        errors.append(
            field_error(fld, lines[1].strip()[:200], "command.second_line")
        )
    if "`" in joined or "$(" in joined:
        errors.append(
            field_error(fld, _snippet(joined, "`" if "`" in joined else "$("), "command.substitution")
        )
    try:
        lexer = shlex.shlex(" ".join(lines), posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError as exc:
        errors.append(field_error(fld, None, "command.unsplittable", error=str(exc)))
        return errors
    ops = [t for t in tokens if t and set(t) <= _OPERATOR_CHARS]
    if ops:
        errors.append(
            field_error(fld, ops[0], "command.shell_operator", op=ops[0])
        )
    if errors and not ops or len(errors) > 1:
        return errors
    if not ops:
        return _structure(tokens, fld)
    parsed = _structure(_main_segment(tokens), fld)  # judged too, so that one answer names every problem
    if isinstance(parsed, list):
        return [*errors, *parsed]
    parsed.problems = errors
    return parsed


def _main_segment(tokens: list[str]) -> list[str]:
    """The simple command among ``a && b | c > f`` that runs a module (``-m``), else the first: the words
    between control operators, without redirections and their targets."""
    segments: list[list[str]] = [[]]
    skip = False
    for tok in tokens:
        if skip:
            skip = False
        elif tok and set(tok) <= _OPERATOR_CHARS:
            if set(tok) & set("<>"):
                skip = True  # the file a redirection names
                if segments[-1] and segments[-1][-1].isdigit():
                    segments[-1].pop()  # the descriptor of 2>&1 (the lexer cut it off)
            elif segments[-1]:
                segments.append([])
        else:
            segments[-1].append(tok)
    segments = [s for s in segments if s]
    return next((s for s in segments if "-m" in s), segments[0] if segments else [])


def _structure(tokens: list[str], fld: str) -> ParsedCommand | list[FieldError]:
    parsed = ParsedCommand(tokens=tokens)
    i = 0
    while i < len(tokens) and _ASSIGN.match(tokens[i]):
        name, _, value = tokens[i].partition("=")
        parsed.env[name] = value
        i += 1
    if i < len(tokens) and tokens[i] == "env":
        return [field_error(fld, "env", "command.env_program")]
    if i >= len(tokens):
        return [field_error(fld, "", "command.no_program")]
    parsed.interpreter = tokens[i]
    i += 1
    if parsed.interpreter == TORCHRUN_PROGRAM:
        return _torchrun(parsed, tokens, i, fld)
    while i < len(tokens) and tokens[i] != "-m":
        if tokens[i] in _INTERPRETER_FLAGS:
            i += 1
        elif tokens[i] in _INTERPRETER_FLAGS_WITH_ARG:
            i += 2
        else:
            break
    if i < len(tokens) and tokens[i] == "-m" and i + 1 < len(tokens):
        parsed.module = tokens[i + 1]
        i += 2
        if parsed.module in TORCHRUN_MODULES:
            return _torchrun(parsed, tokens, i, fld)
    return _with_args(parsed, tokens[i:])


def _with_args(parsed: ParsedCommand, args: list[str]) -> ParsedCommand:
    parsed.args = args
    for arg in parsed.args:
        m = _OVERRIDE.match(arg)
        if m:
            parsed.overrides[m.group("key")] = (m.group("prefix") or "", m.group("value"))
    return parsed


def _torchrun(parsed: ParsedCommand, tokens: list[str], i: int, fld: str) -> ParsedCommand | list[FieldError]:
    """torchrun's options, then ``-m <module>`` and the module's arguments (argparse's rules, no abbreviations)."""
    start = i
    opts: dict[str, str] = {}
    while i < len(tokens) and tokens[i].startswith("-"):
        tok = tokens[i]
        name, eq, value = tok.partition("=")
        canon = _TORCHRUN_SHORT.get(name) or (name[:2] + name[2:].replace("_", "-") if name.startswith("--") else name)
        if canon not in TORCHRUN_OPTIONS:
            return [field_error(fld, tok, "command.torchrun_option")]
        if TORCHRUN_OPTIONS[canon] and not eq:
            if i + 1 >= len(tokens):
                return [field_error(fld, tok, "command.torchrun_option_value")]
            value = tokens[i + 1]
            i += 1
        elif not TORCHRUN_OPTIONS[canon] and eq:
            return [field_error(fld, tok, "command.torchrun_option_no_value")]
        opts[canon] = value
        i += 1
    launcher = "torchrun" if parsed.interpreter == TORCHRUN_PROGRAM else "python3 -m torch.distributed.run"
    if "--module" not in opts or i >= len(tokens):
        found = tokens[i] if i < len(tokens) else ""
        return [field_error(fld, found or launcher, "command.torchrun_module", launcher=launcher)]
    parsed.torchrun = TorchrunOptions(tokens=tokens[start:i], options=opts)
    parsed.module = tokens[i]
    return _with_args(parsed, tokens[i + 1 :])


def module_allowed(module: str, allowlist: list[str] | tuple[str, ...]) -> bool:
    for entry in allowlist:
        if entry.endswith("."):
            if module.startswith(entry) and len(module) > len(entry):
                return True
        elif module == entry or module.startswith(entry + "."):
            return True
    return False


def split_list_value(value: str) -> list[str]:
    """``[a,b]``, ``a,b`` or ``'a'`` → ``['a', 'b']`` (Hydra list syntax, quotes removed)."""
    v = value.strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    return [p.strip().strip("'\"") for p in v.split(",") if p.strip().strip("'\"")]


_EXPANSION_START = re.compile(r"[A-Za-z_0-9{@*#?$!\-]")


def shell_expansions(command: str) -> list[str]:
    """Every ``$NAME`` / ``${...}`` that bash would expand (outside single quotes, not escaped).

    Argus expands its own ``$HOME`` macros first; anything left is filled in by the shell from
    the task's environment when the command runs (``$PWD/../../../bob``), after admission looked
    at the text, so admission refuses it. A Hydra interpolation must reach verl unexpanded: in
    single quotes (``'key=${other.key}'``), where bash leaves it alone.
    """
    found: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(command):
        c = command[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            i += 1  # the next character is literal (in double quotes too, for $ and ")
        elif c == '"':
            quote = None if quote == '"' else '"'
        elif c == "'" and quote is None:
            quote = "'"
        elif c == "$" and i + 1 < len(command) and _EXPANSION_START.match(command[i + 1]):
            nxt = command[i + 1]
            if nxt == "{":
                close = command.find("}", i)
                end = len(command) if close == -1 else close + 1
            elif nxt.isalpha() or nxt == "_":
                end = i + 1 + len(re.match(r"\w*", command[i + 1 :]).group())  # type: ignore[union-attr]
            else:
                end = i + 2  # $1, $@, $$, ...
            found.append(command[i:end])
        i += 1
    return found


def _snippet(text: str, needle: str) -> str:
    at = text.find(needle)
    return text[max(0, at - 20) : at + 40]
