"""Jupyter notebooks: Markdown cells make the breadcrumb, code cells stay whole, outputs short."""

import json
from pathlib import Path

import pytest
from docbuild.chunker import fence_balanced
from docbuild.documents import SkipFile
from docbuild.readers import reader_for
from docbuild.readers.notebook import MAX_OUTPUT_LINES, NotebookReader
from docbuild.util.hygiene import furniture


def notebook(cells: list[dict], language: str = "python", nbformat: int = 4) -> dict:
    return {
        "nbformat": nbformat,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"language": language, "name": language}},
        "cells": cells,
    }


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(keepends=True)}


def code(source: str, outputs: list[dict] | None = None) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": outputs or []}


def write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_cells_become_sections_code_and_short_outputs(tmp_path: Path):
    long_output = "".join(f"row {n}\n" for n in range(100))
    path = write(
        tmp_path,
        "analysis.ipynb",
        notebook(
            [
                markdown("# Sales analysis\n\nWe load the data first."),
                code(
                    "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(len(df))",
                    [{"output_type": "stream", "name": "stdout", "text": ["1200\n"]}],
                ),
                markdown("## Cleaning\n\nDrop rows without a region."),
                code(
                    "df = df.dropna(subset=['region'])\ndf",
                    [
                        {
                            "output_type": "execute_result",
                            "execution_count": 2,
                            "data": {
                                "text/plain": long_output,
                                "text/html": "<table><tr><td>1</td></tr></table>",
                            },
                            "metadata": {},
                        },
                        {
                            "output_type": "display_data",
                            "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
                            "metadata": {},
                        },
                        {
                            "output_type": "display_data",
                            "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "x"}},
                            "metadata": {},
                        },
                    ],
                ),
                code(
                    "raise ValueError('bad region')",
                    [
                        {
                            "output_type": "error",
                            "ename": "ValueError",
                            "evalue": "bad region",
                            "traceback": ["\x1b[31m..."],
                        }
                    ],
                ),
            ]
        ),
    )
    docs, problems = NotebookReader("https://x.org/nb", ".html").read(path, "analysis.ipynb")
    assert problems == []
    (doc,) = docs
    assert doc.title == "Sales analysis" and doc.url == "https://x.org/nb/analysis.html"
    first, cleaning = doc.sections
    assert first.hierarchy == ["Sales analysis"]
    assert "```python\nimport pandas as pd" in first.text and "```text\n1200\n```" in first.text
    assert cleaning.hierarchy == ["Sales analysis", "Cleaning"] and cleaning.anchor == "cleaning"
    assert "row 0" in cleaning.text and f"row {MAX_OUTPUT_LINES}" not in cleaning.text
    assert "…" in cleaning.text  # the cut is marked
    assert "<table>" not in cleaning.text and "iVBORw0KGgo" not in cleaning.text
    assert "model_id" not in cleaning.text
    assert "ValueError: bad region" in cleaning.text and "\x1b" not in cleaning.text
    for section in doc.sections:
        assert fence_balanced(section.text) and furniture(section.text) == []


def test_language_code_with_backticks_and_nbformat3(tmp_path: Path):
    cell = code("x = '```'\nprint(x)")
    path = write(tmp_path, "r.ipynb", notebook([markdown("Intro"), cell], language="R"))
    (doc,) = NotebookReader().read(path, "r.ipynb")[0]
    assert doc.title == "R" and doc.title_from_path  # no heading: title from the file name
    assert "````r\nx = '```'" in doc.sections[0].text and fence_balanced(doc.sections[0].text)

    old = {
        "nbformat": 3,
        "metadata": {},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "source": "Old notebook"},
                    {"cell_type": "code", "input": "1 + 1", "outputs": []},
                ]
            }
        ],
    }
    (doc,) = NotebookReader().read(write(tmp_path, "old.ipynb", old), "old.ipynb")[0]
    assert doc.title == "Old notebook" and "```python\n1 + 1\n```" in doc.sections[0].text


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"cells": [', "invalid JSON at line 1"),
        ("[1, 2]", "no cells"),
        ('{"nbformat": 4, "cells": []}', "no cells"),
        ("", "empty file"),
    ],
)
def test_broken_notebooks_are_skipped_with_the_reason(tmp_path: Path, content: str, reason: str):
    path = write(tmp_path, "broken.ipynb", content)
    with pytest.raises(SkipFile, match=reason):
        reader_for(path).read(path, "broken.ipynb")
