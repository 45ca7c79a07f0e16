"""What every scalemath command shares: the error wrapper, option types and JSON output."""

from __future__ import annotations

import functools
import json
import math
import os
import sys

import click

DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")
LEVELS = ("hbm", "vmem", "ici", "ici-link", "pcie", "dcn", "nvlink")


MAX_MESSAGE_LINE = 600  # characters of one line of an error message (the input is echoed, and may be 100 kB)


def _clip(line: str, limit: int = MAX_MESSAGE_LINE) -> str:
    """``line`` with its middle left out when it is longer than ``limit``.

    >>> _clip("a" * 50 + "b" * 50, 40)
    'aaaaaaaaaaaaaaaaaaaaaaaa ... (66 characters left out) ... bbbbbbbbbb'
    """
    if len(line) <= limit:
        return line
    head, tail = limit * 3 // 5, limit // 4
    return f"{line[:head]} ... ({len(line) - head - tail} characters left out) ... {line[-tail:]}"


def _fail(message: str, code: int) -> None:
    # a message may quote what the user typed (a file name, a value): never let it drive the terminal
    click.echo("\n".join(_clip(_printable(line)) for line in f"error: {message}".split("\n")), err=True)
    sys.exit(code)


def friendly(fn):
    """Turn a ScalemathError into a one-line message and its exit code, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ..errors import ScalemathError

        digits = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(MAX_PRINTED_DIGITS)  # the exact product of 2000-digit inputs has more than 4300
        try:
            return fn(*args, **kwargs)
        except ScalemathError as exc:
            _fail(str(exc), exc.exit_code)
        except BrokenPipeError:  # e.g. piped into head: stop quietly
            sys.stdout = open(os.devnull, "w")
            sys.exit(0)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}", 1)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise  # click prints these itself
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except (RecursionError, MemoryError) as exc:
            _fail(f"the input is too large or too deeply nested to work with ({type(exc).__name__})", 2)
        except Exception as exc:  # a bug of ours: one line the user can report, the traceback on request
            if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
                _fail(f"a result has more than {MAX_PRINTED_DIGITS} digits, too many to print exactly; give smaller "
                      "values with --set", 2)
            if os.environ.get("SCALEMATH_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {str(exc)[:200]}); this is a bug in scalemath: "
                  "please report the command line (SCALEMATH_DEBUG=1 shows the traceback)", 1)
        finally:
            sys.set_int_max_str_digits(digits)
    return wrapper


MAX_PRINTED_DIGITS = 100_000  # digits of an exact result the CLI prints (Python's default limit is 4300)


class WholeNumber(click.ParamType):
    """A whole number typed in ASCII digits (click's int also takes '１２' and '1_000'), within bounds."""

    name = "integer"

    def __init__(self, minimum: int = 1, maximum: int = 10**15):
        self.minimum, self.maximum = minimum, maximum

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            number = value
        else:
            from ..values.parse import shorten

            text = str(value).strip()
            if not (text.isascii() and text.isdigit()):
                self.fail(f"{shorten(str(value))} is not a whole number (ASCII digits, e.g. 32)", param, ctx)
            if len(text.lstrip("0")) > len(str(self.maximum)):
                self.fail(f"{shorten(text)} must be at most {self.maximum}", param, ctx)
            number = int(text)
        if number < self.minimum:
            self.fail(f"{number} must be at least {self.minimum}", param, ctx)
        if number > self.maximum:
            self.fail(f"{number} must be at most {self.maximum}", param, ctx)
        return number


class Choice(click.Choice):
    """click's Choice, with a long wrong value shortened in the message instead of echoed whole."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and len(value) > 60 and value not in self.choices:
            from ..values.parse import shorten

            self.fail(f"{shorten(value)} is not one of {', '.join(map(repr, self.choices))}", param, ctx)
        return super().convert(value, param, ctx)


def _json_safe(value):
    """``value`` with non-finite floats replaced by null (JSON has no Infinity or NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _dumps(value, **kwargs) -> str:
    return json.dumps(_json_safe(value), allow_nan=False, **kwargs)


def _aligned(header, rows, right=()) -> list[str]:
    """The lines of a text table whose every column is as wide as its widest cell; columns whose index is in
    ``right`` are aligned right (numbers), the others left. Columns are two spaces apart.

    >>> _aligned(("name", "n"), [("a-long-name", 1), ("b", 22)], right={1})
    ['name          n', 'a-long-name   1', 'b            22']
    """
    cells = [[str(c) for c in row] for row in (header, *rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in cells]


def check_topic(name: str, topics, listing: str) -> None:
    """Refuse a topic that is not one of ``topics``, naming them once: beside a did-you-mean, or alone when nothing
    is close (then ``listing``, the command that shows what each topic holds, is the hint)."""
    if name in topics:
        return
    from ..errors import UnknownNameError, did_you_mean

    close = not did_you_mean(name, topics).startswith("known:")
    raise UnknownNameError("topic", name, topics,
                           hint="topics: " + ", ".join(topics) if close else f"'{listing}' shows what each holds")


# -- shell completion (click's own: eval "$(_SCALEMATH_COMPLETE=bash_source scalemath)") ------------------------

def _completions(names, incomplete: str, comma_list: bool = False):
    """``names`` that start with what was typed; with ``comma_list``, of the item after the last comma."""
    from click.shell_completion import CompletionItem

    head, _, last = incomplete.rpartition(",") if comma_list else ("", "", incomplete)
    prefix = head + "," if head else ""
    last = last.lower()
    return [CompletionItem(prefix + n) for n in sorted(names) if n.lower().startswith(last)]


def complete_quantity(ctx, param, incomplete):
    """Quantity names (``derive ro<TAB>`` -> roofline.critical_intensity, ...)."""
    from ..quantities import QUANTITIES

    return _completions(QUANTITIES, incomplete)


def complete_chip(ctx, param, incomplete):
    """Chip names of the catalog (``--hardware-file`` when it was given first); a comma list completes its last."""
    from ..catalog import hardware

    path = ctx.params.get("hardware_file")
    try:
        catalog = hardware.load_catalog(path) if path else hardware.default_catalog()
    except Exception:  # an unreadable file completes nothing rather than printing a traceback into the shell
        return []
    return _completions(catalog.chips, incomplete, comma_list=True)


def complete_model(ctx, param, incomplete):
    """Model names of the catalog."""
    from ..catalog import models

    return _completions([m.key for m in models.default_models()], incomplete)


def complete_generator(ctx, param, incomplete):
    """Problem generator names, from the generator index (no generator is imported)."""
    from ..problems.registry import index

    return _completions(index(), incomplete)


def complete_problem_topic(ctx, param, incomplete):
    """Problem set topics (``--topic roof<TAB>``); a comma list completes its last."""
    from ..problems.registry import TOPICS

    return _completions(TOPICS, incomplete, comma_list=True)


def complete_quantity_topic(ctx, param, incomplete):
    """The topics of the named quantities (``quantities --topic co<TAB>`` -> collectives)."""
    from ..quantities import QUANTITIES

    return _completions({q.topic for q in QUANTITIES.values()}, incomplete)


def _printable(text: str) -> str:
    r"""``text`` with control characters written as escapes, so that a message cannot drive the terminal.

    >>> _printable("extra\x1b]0;title\x07")
    'extra\\x1b]0;title\\x07'
    """
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


class _PrintableUsageErrors:
    """click echoes stray arguments raw ('Got unexpected extra argument (...)'): escape them."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.message = _printable(exc.message)
            raise


class Command(_PrintableUsageErrors, click.Command):
    pass


class Group(_PrintableUsageErrors, click.Group):
    command_class = Command
    group_class = type  # subgroups are Groups too


# -- what the engine, catalog and search commands share -------------------------------------------

MAX_CHIPS = 64  # names in one --chip list


def _catalog(hardware_file):
    from ..catalog import hardware

    return hardware.load_catalog(hardware_file) if hardware_file else hardware.default_catalog()


def engine_options(fn):
    """--chip, --dtype, --weight-dtype, --level, --set and --hardware-file."""
    options = [
        click.option("--chip", help="chip name(s) from the catalog, comma-separated (e.g. tpu-v5e,h100)",
                     shell_complete=complete_chip),
        click.option("--dtype", type=Choice(DTYPES), help="compute dtype (default bf16 when a chip is given)"),
        click.option("--weight-dtype", type=Choice(DTYPES), help="weight dtype if it differs (e.g. int8 weights, bf16 compute)"),
        click.option("--kv-dtype", type=Choice(DTYPES), help="KV cache dtype if it differs from --dtype (e.g. int8)"),
        click.option("--level", type=Choice(LEVELS), default="hbm", show_default=True,
                     help="memory or network level a bandwidth W comes from"),
        click.option("--set", "assignments", multiple=True, metavar="SYM=VALUE[,SYM=VALUE]",
                     help="give a parameter a value, e.g. --set D=8192,F=32768 (numbers and arithmetic only)"),
        click.option("--hardware-file", type=click.Path(), help="your own catalog in the format of hardware.toml"),
        click.option("--model", help="a model from the catalog (binds D, F, N, K, H, L, V_vocab, E, k), e.g. llama3-70b",
                     shell_complete=complete_model),
        click.option("--model-config", type=click.Path(),
                     help="a Hugging Face style config.json on disk to read the model from"),
        convention_option,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _store_conventions(ctx, param, value):
    from ..conventions import parse
    from ..errors import BadValueError

    try:
        ctx.meta[CONVENTIONS_KEY] = parse(value or ())
    except BadValueError as exc:
        raise click.BadParameter(str(exc)) from None


CONVENTIONS_KEY = "scalemath.conventions"

#: --convention PROFILE or AXIS=CHOICE (repeatable): read back with :func:`chosen_conventions`.
convention_option = click.option(
    "--convention", multiple=True, metavar="PROFILE|AXIS=CHOICE", expose_value=False, callback=_store_conventions,
    help="count as a paper or framework does: a profile (book, datasheet, palm, megatron, zero-paper, deepseek) or "
         "AXIS=CHOICE, e.g. attention=causal; repeatable, later ones win ('scalemath conventions' lists them; "
         "default: the book's)")


def chosen_conventions():
    """What --convention chose in the running command (the book's outside one)."""
    from ..conventions import BOOK

    ctx = click.get_current_context(silent=True)
    return BOOK if ctx is None else ctx.meta.get(CONVENTIONS_KEY, BOOK)


def _model_catalog(model, model_config):
    """(model key, catalog) from --model or --model-config (a config.json becomes a one-model catalog)."""
    if model is None and model_config is None:
        return None, None
    from ..catalog import models

    if model is not None and model_config is not None:  # an empty --model is a mistake, not "no model"
        raise click.UsageError("give --model or --model-config, not both")
    if model_config is not None:
        from ..catalog.hf_config import model_from_hf_config

        m = model_from_hf_config(model_config)
        return m.key, models.ModelCatalog(str(model_config), {m.key: m})
    if model is not None:
        catalog = models.default_models()
        catalog[model]  # unknown model: did-you-mean now
        return model.lower(), catalog
    return None, None


def _contexts(chip, dtype, weight_dtype, level, hardware_file, model=None, model_config=None, kv_dtype=None):
    from ..quantities import Context

    catalog = _catalog(hardware_file)
    names = list(dict.fromkeys(c.strip() for c in chip.split(",") if c.strip())) if chip is not None else [None]
    if len(names) > MAX_CHIPS:
        raise click.BadParameter(f"{len(names)} chips given; at most {MAX_CHIPS} at once", param_hint="--chip")
    if not names:
        raise click.BadParameter("no chip name given", param_hint="--chip")
    for name in names:
        if name is not None:
            catalog[name]  # unknown chip: did-you-mean now, before any work
    model_key, model_catalog = _model_catalog(model, model_config)
    return [Context(chip=n, dtype=dtype, weight_dtype=weight_dtype, level=level, catalog=catalog,
                    model=model_key, model_catalog=model_catalog, kv_dtype=kv_dtype,
                    conventions=chosen_conventions()) for n in names]


def _given(assignments):
    from ..values.parse import parse_assignments

    return parse_assignments(assignments)
