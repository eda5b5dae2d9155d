"""Every ```python block of docs/python.md runs, in order, in one namespace; so does every
```python block of README.md and of docs/tci.md."""

import os
import re


def blocks(path):
    root = os.environ.get("TENLANE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)


def run_blocks(path, found):
    namespace = {"__name__": "docs_python"}
    for number, code in enumerate(found):
        exec(compile(code, "%s block %d" % (path, number + 1), "exec"), namespace)


def test_python_blocks_of_the_guide_run():
    found = blocks("docs/python.md")
    assert len(found) >= 6
    run_blocks("docs/python.md", found)


def test_python_blocks_of_the_readme_run():
    found = blocks("README.md")
    assert len(found) >= 1
    run_blocks("README.md", found)


def test_python_blocks_of_the_tci_page_run():
    found = blocks("docs/tci.md")
    assert len(found) >= 2
    run_blocks("docs/tci.md", found)
