"""A new user's first verdict: the templates' example files, not yet uploaded, are one to-do, not a wall.

The New Task page opens on a template whose model and data paths (``$HOME/models/tiny``,
``$HOME/datasets/gsm8k/train.parquet``...) are examples: a new user's home is empty, so the check
answered three "does not exist" errors before they typed anything (issue 25). Those errors are true
(a submit is still refused: nothing here lets a missing file through) but they are one problem,
"upload your data first", and are told as one, with the page where it is done (``link``).

Only errors about a path that is still one of ``EXAMPLE_PATHS`` and that does not exist are folded;
a path the user typed keeps its own error. tests/web/test_templates checks that every template's
paths are listed here, so a template edit cannot bring the wall back.
"""

from __future__ import annotations

from dataclasses import replace

from argus.core.messages import field_error
from argus.errors import FieldError

# The example model and data paths the WebUI's templates (web/spec_templates) start from, as the user writes them.
EXAMPLE_PATHS = frozenset({
    "$HOME/models/tiny",
    "$HOME/datasets/gsm8k/train.parquet",
    "$HOME/datasets/gsm8k/test.parquet",
    "$HOME/datasets/sft/train.parquet",
    "$HOME/datasets/sft/val.parquet",
})
DATA_PAGE = "/data"
_MISSING = "does not exist"


def _is_example_missing(e: FieldError) -> bool:
    return isinstance(e.value, str) and e.value.strip() in EXAMPLE_PATHS and _MISSING in e.message


def fold_example_paths(errors: list[FieldError]) -> list[FieldError]:
    """``errors`` with every "does not exist" error at a template's example path replaced by one error
    (at the first one's field) that says to upload the files first, or to point the fields at one's own.

    Errors are expected as the user sees them (``problems.shown``: paths written ``$HOME/...``)."""
    examples = [e for e in errors if _is_example_missing(e)]
    if not examples:
        return errors
    paths = list(dict.fromkeys(str(e.value).strip() for e in examples))
    fields = list(dict.fromkeys(e.field for e in examples))
    first = examples[0]
    one = replace(field_error(first.field, None, "path.example_files", paths=", ".join(paths), page=DATA_PAGE,
                              fields=", ".join(fields)), link=DATA_PAGE)
    out: list[FieldError] = []
    for e in errors:
        if e is first:
            out.append(one)
        elif not _is_example_missing(e):
            out.append(e)
    return out
