"""The CLI's structure: one module per command, one error type, one progress bar."""

import io
import pkgutil

import pytest

import crawler_dedup.cli as cli
from crawler_dedup.cli import inspect as inspect_command
from crawler_dedup.cli.common import CliError, Progress


def test_every_command_module_is_registered():
    modules = {m.name for m in pkgutil.iter_modules(cli.__path__)} - {"common"}
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


def test_progress_draws_only_on_a_terminal_and_ends_its_line():
    piped = io.StringIO()
    Progress("reading", stream=piped)(5, 10, final=True)
    assert piped.getvalue() == ""
    tty = _Tty()
    bar = Progress("extracting", stream=tty)
    bar(1, 4)
    bar(2, 4)  # within 0.1 s of the last: not redrawn
    bar(4, 4)  # the end always is
    assert tty.getvalue() == ("\rextracting [#######.......................] 1/4"
                              "\rextracting [##############################] 4/4\n")
    tty = _Tty()
    Progress("reading", unit="MiB", stream=tty)(3 << 20, 6 << 20, final=True)
    assert tty.getvalue() == "\rreading [###############...............] 3/6 MiB\n"
