"""The CLI's structure: one module per command, one error type, one progress bar."""

import argparse
import io
import pkgutil

import pytest

import crawler_dedup.cli as cli
from crawler_dedup.cli import inspect as inspect_command
from crawler_dedup.cli.common import CliError
from crawler_dedup.cli.out import Progress


def test_every_command_module_is_registered():
    modules = {m.name for m in pkgutil.iter_modules(cli.__path__)} - {"common", "out"}
    assert modules == set(cli.COMMANDS)
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(cli.COMMANDS)
    for name, parser in sub.choices.items():
        assert parser.get_default("run").__module__ == f"crawler_dedup.cli.{name}"


@pytest.mark.parametrize("code", [1, 2, 3])
def test_a_cli_error_is_printed_with_its_command_and_its_code_is_the_exit_code(monkeypatch, capsys, code):
    def fail(args):
        raise CliError("something is wrong", code)

    monkeypatch.setattr(inspect_command, "run", fail)
    assert cli.main(["inspect", "log.jsonl"]) == code
    out, err = capsys.readouterr()
    assert out == "" and err == "crawler-dedup inspect: something is wrong\n"


def test_no_command_prints_the_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_only_on_a_terminal_and_clears_its_line():
    piped = io.StringIO()
    Progress("reading", stream=piped)(5, 10, final=True)
    assert piped.getvalue() == ""
    tty = _Tty()
    bar = Progress("extracting", stream=tty)
    bar(1, 4)
    assert bar._bar is not None  # drawing (rich, on the terminal)
    bar(4, 4)  # the end stops it
    assert bar._bar is None
    drawn = tty.getvalue()
    assert "extracting" in drawn and "4/4" in drawn
    assert "\x1b[?25h" in drawn and drawn.endswith("\x1b[2K")  # the cursor shown again, the bar's line cleared
    tty = _Tty()
    Progress("reading", unit="MiB", stream=tty)(3 << 20, 6 << 20, final=True)
    assert "3.0/6.0 MiB" in tty.getvalue()


def _commands():
    """{("index", "stats"): parser, ("inspect",): parser, ...} for every command and subcommand."""
    out = {}
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        inner = [a for a in parser._actions if a.dest == "index_command"]
        if inner:
            out.update({(name, n): p for n, p in inner[0].choices.items()})
        else:
            out[(name,)] = parser
    return out


def _options(parser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def test_one_convention_across_the_commands():
    commands = _commands()
    index = {("show",), ("report",), *[c for c in commands if c[0] == "index" and c != ("index", "plan")]}
    logs = {("inspect",), ("show",), ("report",), ("restore",)}
    reading = {("inspect",), ("show",), ("compare",), ("eval",), ("doctor",), ("scan",), ("index", "stats"),
               ("index", "verify"), ("index", "plan"), ("index", "add"), ("index", "remove"), ("index", "expire")}
    destructive = {("index", "remove"), ("index", "expire"), ("index", "compact"), ("index", "rebuild")}
    for name, parser in commands.items():
        opts = _options(parser)
        if name in index:
            assert "--dir" in opts, name
        if name in index - {("index", "compact"), ("index", "rebuild")}:
            assert "--redis" in opts, name
        if name in logs:
            assert "--log" in opts, name
        if name in reading:
            assert "--json" in opts, name
        if name in destructive:
            assert "--yes" in opts, name
        if name not in {("demo",), ("index", "plan")}:
            assert "-s" in opts, name
        shown = [a for a in parser._actions if not a.option_strings and a.help != argparse.SUPPRESS]
        assert all(a.dest not in ("log", "dir") for a in shown), name  # never positional again
        url = [a for a in parser._actions if "--url" in a.option_strings]
        if url:
            assert "glob" in url[0].help and "substring" in url[0].help, name  # one meaning everywhere


def test_the_earlier_positional_forms_still_work_but_not_both(tmp_path, capsys):
    log = tmp_path / "d.jsonl"
    log.write_text("", encoding="utf-8")
    assert cli.main(["inspect", str(log), "--json"]) == 0
    assert cli.main(["inspect", "--log", str(log), "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["inspect", str(log), "--log", str(tmp_path / "other.jsonl")]) == 2
    assert "give --log only" in capsys.readouterr().err


def test_tables_are_plain_text_when_piped_and_rich_on_a_terminal(monkeypatch):
    from crawler_dedup.cli.out import table

    rows = [["http://a/x\x1b[2J", 12], ["http://b/" + "y" * 300, 3]]
    piped = io.StringIO()
    table(["url", ("drops", "right")], rows, title="by URL:", file=piped)
    lines = piped.getvalue().splitlines()
    assert lines[0] == "by URL:" and lines[1].split() == ["url", "drops"]
    assert "\x1b" not in piped.getvalue() and "http://a/x\\x1b[2J" in lines[2]  # shown, not acted on
    assert lines[3].startswith("http://b/" + "y" * 300) and lines[3].endswith(" 3")  # never cut nor wrapped
    assert all(line == line.rstrip() for line in lines)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    tty = _Tty()
    table(["url", ("drops", "right")], rows, title="by URL:", file=tty)
    assert "\x1b[" in tty.getvalue() and "─" in tty.getvalue()  # styles and a ruled header
    assert "\x1b[2J" not in tty.getvalue()  # the crawled ESC is still escaped
    monkeypatch.setenv("NO_COLOR", "1")
    tty = _Tty()
    table(["url", ("drops", "right")], rows, file=tty)
    assert "\x1b" not in tty.getvalue()


def test_index_plan_json_and_text_agree(capsys):
    assert cli.main(["index", "plan", "--k", "3", "--json"]) == 0
    rows = __import__("json").loads(capsys.readouterr().out)["rows"]
    assert cli.main(["index", "plan", "--k", "3"]) == 0
    text = capsys.readouterr().out
    for row in rows:
        assert f"{row['pages']:,}" in text
