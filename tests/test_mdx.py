"""MDX cleaning removes imports, exports and JSX without touching code, tables or placeholders."""

from docbuild.readers.mdx import clean_mdx, parse_tag, strip_tags

MDX = """import Tabs from '@theme/Tabs';
import {
  requirements,
  other,
} from '@site/docs/requirements';
export const meta = {
  title: "x",
};

Intro with `<Tag>` inline code and a placeholder: mojo run <file>.

<Requirements requirementsData={requirements}
url="/mojo/manual/install#system-requirements" />

<Tabs groupId="install">
<TabItem value="pixi" label="pixi" default>

Install with pixi:

```jsx
import Foo from './foo';
<Component prop={a > b} />
if (a < b && c > d) { return <div/>; }
```

</TabItem>
</Tabs>

| op | meaning |
|----|---------|
| a < b | less than |
| x<y, x>y | compare `<T>` |
| List<Int> | generic |

:::note Remember

Admonition text stays.

:::

<figure>
<img src="a.png" alt="x" />
<figcaption><b>Figure 1.</b> Pointer and pointee</figcaption>
</figure>

{/* an MDX comment */}
<!-- an HTML comment -->
End.
"""


def test_imports_exports_removed_but_code_kept_verbatim():
    out = clean_mdx(MDX)
    assert "@theme/Tabs" not in out and "requirements," not in out
    assert "export const" not in out
    code = MDX[MDX.index("```jsx") : MDX.index("```\n\n</TabItem>") + 3]
    assert code in out  # the fenced block, JSX and comparisons included, is byte-identical


def test_jsx_removed_text_kept():
    out = clean_mdx(MDX)
    for gone in (
        "<Tabs",
        "</TabItem>",
        "<Requirements",
        "requirementsData",
        "<figure>",
        "<b>",
        "<img",
    ):
        assert gone not in out
    assert "Install with pixi:" in out
    assert "Figure 1. Pointer and pointee" in out
    assert "comment" not in out


def test_tables_inline_code_and_placeholders_survive():
    out = clean_mdx(MDX)
    assert "| a < b | less than |" in out
    assert "| x<y, x>y | compare `<T>` |" in out
    assert "| List<Int> | generic |" in out
    assert "`<Tag>`" in out
    assert "mojo run <file>." in out


def test_admonitions_become_labels():
    out = clean_mdx(MDX)
    assert ":::" not in out
    assert "**Note: Remember**" in out
    assert "Admonition text stays." in out


def test_parse_tag_rejects_non_tags():
    assert parse_tag("< b", 0) == (None, "")
    assert parse_tag('<a href="x">', 0) == (len('<a href="x">'), "a")
    assert parse_tag("<X y={{a: '}'}} />", 0)[0] == len("<X y={{a: '}'}} />")
    assert parse_tag('<a href="unterminated>', 0) == (None, "")


def test_unclosed_tag_is_left_alone():
    assert strip_tags("a <Foo bar=") == "a <Foo bar="
