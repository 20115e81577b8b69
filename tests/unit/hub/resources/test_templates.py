"""RFC 6570 templates, every level: the strict parser, expansion through uritemplate, the SDK's limits."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_bridge.hub.resources.templates import (
    MAX_TEMPLATE_LENGTH,
    MAX_VARIABLES,
    TemplateError,
    Value,
    expand,
    parse,
)

# The variables of RFC 6570 §1.2 (all but the associative array ``keys``, which the wire cannot carry).
RFC_VALUES: dict[str, Value] = {
    "var": "value",
    "hello": "Hello World!",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "x": "1024",
    "y": "768",
    "empty": "",
}

# RFC 6570 §1.2, levels 1 to 4, every example that does not use ``keys``.
RFC_EXAMPLES = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
]


@pytest.mark.parametrize(("template", "expanded"), RFC_EXAMPLES)
def test_every_rfc_6570_example_expands_as_the_rfc_says(template: str, expanded: str) -> None:
    assert expand(parse(template), RFC_VALUES) == expanded


@pytest.mark.parametrize(
    ("template", "variables"),
    [
        ("x://{a}{+b}{#c}", ("a", "b", "c")),
        ("x://{.d}{/e}{;f}", ("d", "e", "f")),
        ("x://s{?g,h}{&i}", ("g", "h", "i")),
        ("x://{a:3}{/list*}{?tag*,q}", ("a", "list", "tag", "q")),
        ("x://{a}/{a:1}{?a}", ("a",)),
        ("x://{dotted.name,pct%41}", ("dotted.name", "pct%41")),
        ("x://plain", ()),
    ],
)
def test_variables_are_listed_once_in_order_whatever_their_operator_and_modifier(
    template: str, variables: tuple[str, ...]
) -> None:
    assert parse(template).variables == variables


@pytest.mark.parametrize(
    ("template", "optional"),
    [
        ("x://{id}{?page,size}", {"page", "size"}),
        ("x://{id}{?page}{&size}", {"page", "size"}),
        ("x://{id}{&size}", set()),
        ("x://{id}{?page}/more", set()),
        ("x://{?a}/{id}{?b}", {"b"}),
        ("x://{id}{?id,page}", {"page"}),
    ],
)
def test_only_a_trailing_run_of_query_expressions_starting_with_a_question_mark_is_optional(
    template: str, optional: set[str]
) -> None:
    assert parse(template).optional == optional


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        ("x://{unclosed", "not closed"),
        ("x://a}b", "without '{'"),
        ("x://{}", "names no variable"),
        ("x://{+}", "names no variable"),
        ("x://{a{b}", "holds a '{'"),
        ("x://{=a}", "reserved"),
        ("x://{|a}", "reserved"),
        ("x://{a b}", "not a variable name"),
        ("x://{a,}", "not a variable name"),
        ("x://{a.}", "not a variable name"),
        ("x://{a..b}", "not a variable name"),
        ("x://{a:0}", "not a variable name"),
        ("x://{a:10000}", "not a variable name"),
        ("x://{a*:3}", "not a variable name"),
        ("x://{a=default}", "not a variable name"),
        ("x://{a%4}", "not a variable name"),
    ],
)
def test_a_template_outside_the_rfc_grammar_is_refused_saying_what_is_wrong(template: str, complaint: str) -> None:
    with pytest.raises(TemplateError, match=complaint):
        parse(template)


def test_the_sdk_length_limit_holds() -> None:
    base = "x://{a}/"
    parse(base + "b" * (MAX_TEMPLATE_LENGTH - len(base)))
    with pytest.raises(TemplateError, match=f"over the limit of {MAX_TEMPLATE_LENGTH}"):
        parse(base + "b" * (MAX_TEMPLATE_LENGTH - len(base) + 1))


def test_the_sdk_variable_limit_holds_counting_variables_not_expressions() -> None:
    names = [f"v{i}" for i in range(MAX_VARIABLES + 1)]
    assert len(parse("x://{" + ",".join(names[:-1]) + "}").varspecs) == MAX_VARIABLES
    with pytest.raises(TemplateError, match=f"more than {MAX_VARIABLES} variables"):
        parse("x://{" + ",".join(names) + "}")


def test_an_empty_list_is_undefined_and_leaves_its_expression_out() -> None:
    template = parse("x://s{/path*}{?tag*}{;m}")
    assert expand(template, {"path": [], "tag": [], "m": []}) == "x://s"


def test_a_list_for_a_variable_with_a_prefix_modifier_is_refused() -> None:
    with pytest.raises(ValueError, match="prefix modifier"):
        expand(parse("x://{a:2}/{a}"), {"a": ["one", "two"]})


def test_a_list_of_something_other_than_strings_is_refused() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        expand(parse("x://{a}"), {"a": ["one", 2]})  # pyright: ignore[reportArgumentType]


@pytest.mark.requirement("C20")
@pytest.mark.parametrize(
    ("value", "expanded"),
    [
        ("a%20b c", "x://a%20b%20c"),  # a triplet is kept, the space still encoded
        ("50% off %41", "x://50%25%20off%20%41"),  # a lone % is encoded, the triplet kept
        ("é/%2F\n", "x://%C3%A9/%2F%0A"),
    ],
)
def test_reserved_expansion_keeps_triplets_and_encodes_what_a_uri_cannot_hold(value: str, expanded: str) -> None:
    assert expand(parse("x://{+v}"), {"v": value}) == expanded


@pytest.mark.requirement("C20")
def test_literal_characters_a_uri_cannot_hold_are_percent_encoded() -> None:
    assert expand(parse("x://dossier été/100%/{v}"), {"v": "1"}) == "x://dossier%20%C3%A9t%C3%A9/100%25/1"


def test_a_value_that_looks_like_an_expression_is_not_expanded_again() -> None:
    assert expand(parse("x://{a}/{b}"), {"a": "{b}", "b": "x"}) == "x://%7Bb%7D/x"


@given(st.lists(st.text(), max_size=5))
@pytest.mark.requirement("C20")
def test_any_list_expands_to_one_path_segment_per_item_that_decodes_back(items: list[str]) -> None:
    try:
        "".join(items).encode()
    except UnicodeEncodeError:
        return  # lone surrogates cannot be sent in UTF-8 JSON at all
    uri = expand(parse("x://r{/path*}"), {"path": items})
    rest = uri.removeprefix("x://r")
    assert rest.isascii()
    assert "?" not in rest and "#" not in rest
    segments = rest.split("/")[1:] if items else []
    assert [unquote(segment, errors="strict") for segment in segments] == items
