"""Man pages generated from the click commands, so that they say what ``--help`` says.

``python -m cigri.cli.manpage man/`` writes ``grid.1``, one ``grid-<command>.1`` per subcommand, a full page
for each standalone script (``gridsub.1`` ...: ``man -l`` cannot follow a ``.so`` link) and ``cigri-jdl.5``
from the key table of :mod:`cigri.jdl_keys`; ``--check`` writes nothing and exits 1 listing the stale pages.
Nothing in a page changes between runs (no dates), so a test can compare.
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version
from pathlib import Path

import click

from .. import errors, jdl, jdl_keys, macros
from . import STANDALONE, grid

_EXIT_ROW = re.compile(r"^[\s│├└─]*([A-Z]\w+)\s+(\d+)\s+(.+)$")
_EXIT_SENTENCE = re.compile(r"^(.+) exit with (\d+)\.$")


def _escape(text: str) -> str:
    """Roff text: backslashes and hyphens escaped, no line taken for a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n"))


def _bold(text: str) -> str:
    return f"\\fB{_escape(text)}\\fR"


def _page_name(ctx: click.Context) -> str:
    return ctx.command_path.replace(" ", "-")


def _help_text(command: click.Command) -> str:
    return inspect.cleandoc((command.help or "").split("\f")[0])


def _summary(command: click.Command) -> str:
    """The NAME line: the help's first paragraph, without its final period."""
    first = _help_text(command).split("\n\n")[0]
    return " ".join(first.split()).rstrip(".")


def _paragraphs(text: str) -> list[str]:
    """Click's help as roff: paragraphs refilled, ``\\b`` blocks (the examples) kept line by line."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.startswith("\b"):
            lines = paragraph.split("\n")[1:]
            out += [".PP", ".nf", *(_escape(line.rstrip()) for line in lines), ".fi"]
        elif paragraph.strip():
            out += [".PP", _escape(" ".join(paragraph.split()))]
    return out


def _options(ctx: click.Context) -> list[str]:
    out = []
    for param in ctx.command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is None:
            continue
        names, help_text = record
        own = set(param.opts) | set(param.secondary_opts)
        words = []
        for word in names.split(" "):
            name = word.rstrip(",;")
            if name in own:
                words.append(_bold(name) + _escape(word[len(name) :]))
            elif word == "/":
                words.append(word)
            else:
                words.append(f"\\fI{_escape(word)}\\fR")
        out += [".TP", " ".join(words)]
        if help_text:
            out.append(_escape(help_text))
    return out


def _synopsis(ctx: click.Context) -> list[str]:
    usage = _escape(" ".join(ctx.command.collect_usage_pieces(ctx)))
    return [".B " + _escape(ctx.command_path), usage]


def _subcontexts(ctx: click.Context) -> list[click.Context]:
    if not isinstance(ctx.command, click.Group):
        return []
    commands = [ctx.command.get_command(ctx, name) for name in ctx.command.list_commands(ctx)]
    return [click.Context(c, info_name=c.name, parent=ctx, **c.context_settings) for c in commands]


def exit_statuses() -> list[tuple[int, str]]:
    """(code, meaning) from the table in :mod:`cigri.errors`' docstring, with success and click's usage code."""
    rows = [(0, "success")]
    table = False
    for line in (errors.__doc__ or "").splitlines():
        if line.rstrip().endswith("::"):
            table = True
        elif table and (row := _EXIT_ROW.match(line)):
            name, code, meaning = row.groups()
            rows.append((int(code), f"{name}: {meaning.strip()}"))
        elif sentence := _EXIT_SENTENCE.match(line.strip()):
            rows.append((int(sentence.group(2)), sentence.group(1)))
    return sorted(rows)


def _exit_status() -> list[str]:
    out = [".SH EXIT STATUS"]
    for code, meaning in exit_statuses():
        out += [".TP", f".B {code}", _escape(meaning)]
    return out


def _see_also(names: list[str]) -> list[str]:
    """``name`` is a section 1 page, ``name(5)`` one of another section."""
    out = [".SH SEE ALSO"]
    for index, name in enumerate(names):
        page, _, section = name.rstrip(")").partition("(")
        out.append(f".BR {_escape(page)} ({section or 1})" + ("," if index < len(names) - 1 else ""))
    return out


def _page(ctx: click.Context, see_also: list[str]) -> str:
    """The page of ``grid`` (its commands listed), of ``grid <command>`` or of a standalone script
    (their subcommands, as ``gridclusters add``, described in full)."""
    command = ctx.command
    title = _page_name(ctx)
    top = command is grid
    subs = [] if top else _subcontexts(ctx)
    lines = [
        f'.TH {_escape(title.upper())} 1 "" "cigri {version("cigri")}" "cigri manual"',
        ".SH NAME",
        f"{_escape(title)} \\- {_escape(_summary(command))}",
        ".SH SYNOPSIS",
        *_synopsis(ctx),
    ]
    if command.name in STANDALONE:
        other = command.name if ctx.parent is not None else f"grid {command.name}"
        lines += [".br", ".B " + _escape(other), _escape(" ".join(command.collect_usage_pieces(ctx)))]
    for sub in subs:
        lines += [".br", *_synopsis(sub)]
    lines += [".SH DESCRIPTION", *_paragraphs(_help_text(command)), ".SH OPTIONS", *_options(ctx)]
    if top:
        lines.append(".SH COMMANDS")
        for sub in _subcontexts(ctx):
            lines += [
                ".TP",
                _bold(sub.info_name),
                f"{_escape(_summary(sub.command))}: see",
                f".BR {_escape(_page_name(sub))} (1).",
            ]
    elif subs:
        lines.append(".SH COMMANDS")
        for sub in subs:
            lines.append(f'.SS "{_escape(sub.command_path)}"')
            lines += _paragraphs(_help_text(sub.command))
            lines += [".PP", "Options:", ".RS", *_options(sub), ".RE"]
    lines += [*_exit_status(), *_see_also(see_also)]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """File name -> roff text of every page."""
    root = click.Context(grid, info_name="grid", **grid.context_settings)  # as invoked: -h is a help option too
    subs = _subcontexts(root)
    out = {"grid.1": _page(root, [*(_page_name(s) for s in subs), "cigri-jdl(5)"])}
    for sub in subs:
        family = [_page_name(s) for s in subs if s.command.callback.__module__ == sub.command.callback.__module__]
        jdl_page_too = ["cigri-jdl(5)"] if sub.command.name == "gridsub" else []
        others = [name for name in family if name != _page_name(sub)]
        out[f"{_page_name(sub)}.1"] = _page(sub, ["grid", *others, *jdl_page_too])
    for name, command in STANDALONE.items():
        ctx = click.Context(command, info_name=name, help_option_names=["-h", "--help"])
        out[f"{name}.1"] = _page(ctx, ["grid", f"grid-{name}", "cigri-jdl(5)"])
    out["cigri-jdl.5"] = jdl_page()
    return dict(sorted(out.items()))


def _key_rows(keys: list[jdl_keys.JdlKey]) -> list[str]:
    out = []
    for key in keys:
        default = f"; default {_bold(key.default)}" if key.default else ""
        out += [".TP", f"{_bold(key.name)} (\\fI{_escape(key.type)}\\fR{default})", _escape(key.description)]
    return out


def _macro_rows() -> list[str]:
    out = []
    for macro in macros.MACROS:
        out += [".TP", f"{_bold(macro.name)} (in {_escape(macro.where)})", _escape(macro.value)]
    return out


def jdl_page() -> str:
    """cigri-jdl(5): the JDL's format and every key of :data:`cigri.jdl_keys.KEYS`."""
    campaign = [key for key in jdl_keys.KEYS if not key.per_cluster]
    cluster = [key for key in jdl_keys.KEYS if key.per_cluster]
    example = """name: sweep
exec_file: "{HOME}/bin/simulate"
walltime: "00:10:00"
params:
  - "a 1"
  - "b 2"
clusters:
  luke:
    resources: /core=2
  dahu:
    walltime: 600
    max_jobs: 50"""
    lines = [
        f'.TH CIGRI\\-JDL 5 "" "cigri {version("cigri")}" "cigri manual"',
        ".SH NAME",
        "cigri\\-jdl \\- the campaign description given to gridsub",
        ".SH DESCRIPTION",
        ".PP",
        "A JDL describes a campaign: its jobs (one per param line) and the clusters they may run on. "
        "It is YAML or CiGri's JSON; keys are case\\-insensitive. "
        "Values may be given in CiGri's string forms (\\(dqfalse\\(dq, \\(dq300\\(dq, \\(dq00:5:00\\(dq).",
        ".PP",
        "JSON is read as CiGri's parser (Ruby's) reads it: in a string, a backslash before a character JSON has "
        "no escape for stands for that character (\\(dq\\e$HOME\\(dq is $HOME). "
        "A key given twice in one mapping, in JSON or YAML, is an error naming its path.",
        ".PP",
        "Campaign\\-wide keys are given at the top level only. "
        "Every other key may be given at the top level, as the default of every cluster, "
        "or under one cluster of \\fBclusters\\fR, for that cluster only. "
        "Give exactly one of \\fBparams\\fR, \\fBparam_file\\fR and \\fBnb_jobs\\fR. "
        "Each job runs \\fBexec_file\\fR followed by its param line.",
        ".PP",
        "An unknown key is an error naming it (with the closest known key). "
        "CiGri's values that cigri does not build are refused, the error saying what to write instead: "
        "jobs_type desktop_computing, type semi\\-best\\-effort and nightly, output_gathering_method iRods "
        "and collector. A cluster gridclusters does not know is left out, with a warning; a campaign naming no "
        "known cluster is refused.",
        ".PP",
        "The first word of each param line is the job's name, unique in the campaign; it names the job's folder "
        "of outputs, so it may not hold a /, be empty, . or .. (refused at submission, naming the line).",
        ".SH LIMITS",
        ".PP",
        f"Lists and mappings may nest {jdl.MAX_DEPTH} deep, the JDL's own mapping counting as the first, and a JDL "
        f"holds at most {jdl.MAX_VALUES:,} values (keys, list items and texts), YAML aliases expanded, each alias "
        "counting what its anchor holds. A JDL beyond either is refused before any key is read (exit 3, naming "
        "the key path); an anchor holding an alias of itself is too deep. Long lists of params go in a "
        "\\fBparam_file\\fR, which has no such limit.",
        ".SH CAMPAIGN-WIDE KEYS",
        *_key_rows(campaign),
        ".SH PER-CLUSTER KEYS",
        *_key_rows(cluster),
        ".SH MACROS",
        ".PP",
        "Words cigri replaces in the JDL's texts; nothing else in them is expanded but by the shell of a prologue "
        "or epilogue.",
        *_macro_rows(),
        ".SH EXAMPLE",
        ".PP",
        ".nf",
        *(_escape(line) for line in example.split("\n")),
        ".fi",
        ".PP",
        "More in the repository's jdl\\-examples/ directory.",
        *_see_also(["gridsub", "grid-gridsub", "grid"]),
    ]
    return "\n".join(lines) + "\n"


def stale(directory: Path) -> dict[Path, str]:
    """The pages of ``directory`` that are ``missing``, ``stale`` or ``extra``."""
    wanted = pages()
    out = {}
    for name, text in wanted.items():
        path = directory / name
        if not path.is_file():
            out[path] = "missing"
        elif path.read_text(encoding="utf-8") != text:
            out[path] = "stale"
    pages_there = sorted([*directory.glob("*.1"), *directory.glob("*.5")])
    out.update({path: "extra" for path in pages_there if path.name not in wanted})
    return out


def write(directory: Path) -> dict[Path, str]:
    """Bring ``directory`` up to date (extra ``*.1`` pages are removed); return what was wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = pages()
    problems = stale(directory)
    for path, problem in problems.items():
        if problem == "extra":
            path.unlink()
        else:
            path.write_text(wanted[path.name], encoding="utf-8")
    return problems


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing the pages that are stale.")
def main(directory: Path, check: bool) -> None:
    """Write the man pages of grid and its commands into DIRECTORY (man/ in the repository)."""
    if check:
        problems = stale(directory)
        for path, problem in problems.items():
            click.echo(f"{path}: {problem}", err=True)
        if problems:
            click.echo(f"regenerate them with: python -m cigri.cli.manpage {directory}", err=True)
            raise SystemExit(1)
        return
    for path, problem in write(directory).items():
        click.echo(f"{path}: {'removed' if problem == 'extra' else 'written'}")


if __name__ == "__main__":
    main()
