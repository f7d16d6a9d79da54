//! JSON edited as text: where each value of a document lies (byte spans), and edits that
//! insert or remove one member or item while leaving every other byte where it was.
//!
//! The text is first parsed by `serde_json` (which rejects what is not JSON); the span
//! scanner here then assumes valid JSON and answers `None` rather than panicking on
//! anything else.

use serde_json::Value;

/// One value of the document and the bytes it spans (`start..end`).
#[derive(Debug)]
pub(crate) struct Node {
    /// The first byte of the value.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// What it is.
    pub kind: Kind,
}

/// The shape of a [`Node`].
#[derive(Debug)]
pub(crate) enum Kind {
    /// An object and its members in text order.
    Object(Vec<Member>),
    /// An array and its items.
    Array(Vec<Node>),
    /// A string, number, `true`, `false` or `null`.
    Scalar,
}

/// One `"key": value` of an object.
#[derive(Debug)]
pub(crate) struct Member {
    /// The key, decoded.
    pub key: String,
    /// The byte of the key's opening quote.
    pub key_start: usize,
    /// One past the key's closing quote.
    pub key_end: usize,
    /// The value.
    pub value: Node,
}

impl Node {
    /// The members, when this is an object.
    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The items, when this is an array.
    pub fn items(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(i) => Some(i),
            _ => None,
        }
    }

    /// The member `key` (the last one, as serde_json reads duplicates) and its position.
    pub fn member(&self, key: &str) -> Option<(usize, &Member)> {
        self.members()?
            .iter()
            .enumerate()
            .rev()
            .find(|(_, m)| m.key == key)
    }
}

/// The spans of the JSON document `text`, or `None` when it is not one value.
pub(crate) fn parse(text: &str) -> Option<Node> {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    let node = value(b, &mut pos)?;
    (skip_ws(b, pos) == b.len()).then_some(node)
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while pos < b.len() && matches!(b[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

fn value(b: &[u8], pos: &mut usize) -> Option<Node> {
    let start = *pos;
    let kind = match *b.get(start)? {
        b'{' => Kind::Object(object(b, pos)?),
        b'[' => Kind::Array(array(b, pos)?),
        b'"' => {
            *pos = string_end(b, start)?;
            Kind::Scalar
        }
        _ => {
            while *pos < b.len()
                && !matches!(b[*pos], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                *pos += 1;
            }
            Kind::Scalar
        }
    };
    (*pos > start).then_some(Node {
        start,
        end: *pos,
        kind,
    })
}

/// One past the closing quote of the string opening at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn object(b: &[u8], pos: &mut usize) -> Option<Vec<Member>> {
    let mut members = Vec::new();
    *pos = skip_ws(b, *pos + 1);
    if b.get(*pos) == Some(&b'}') {
        *pos += 1;
        return Some(members);
    }
    loop {
        let key_start = *pos;
        let key_end = string_end(b, key_start)?;
        let key: String = serde_json::from_slice(&b[key_start..key_end]).ok()?;
        *pos = skip_ws(b, key_end);
        (b.get(*pos) == Some(&b':')).then_some(())?;
        *pos = skip_ws(b, *pos + 1);
        let value = value(b, pos)?;
        members.push(Member {
            key,
            key_start,
            key_end,
            value,
        });
        *pos = skip_ws(b, *pos);
        match b.get(*pos)? {
            b',' => *pos = skip_ws(b, *pos + 1),
            b'}' => {
                *pos += 1;
                return Some(members);
            }
            _ => return None,
        }
    }
}

fn array(b: &[u8], pos: &mut usize) -> Option<Vec<Node>> {
    let mut items = Vec::new();
    *pos = skip_ws(b, *pos + 1);
    if b.get(*pos) == Some(&b']') {
        *pos += 1;
        return Some(items);
    }
    loop {
        items.push(value(b, pos)?);
        *pos = skip_ws(b, *pos);
        match b.get(*pos)? {
            b',' => *pos = skip_ws(b, *pos + 1),
            b']' => {
                *pos += 1;
                return Some(items);
            }
            _ => return None,
        }
    }
}

/// The whitespace that starts the line holding byte `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let line = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// `value` as JSON: pretty, indented by `unit` per level and by `indent` after each line
/// break, or on one line when `pretty` is false.
fn render(value: &Value, pretty: bool, indent: &str, unit: &str) -> String {
    if !pretty {
        return value.to_string();
    }
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    if serde::Serialize::serialize(value, &mut ser).is_err() {
        return value.to_string();
    }
    String::from_utf8_lossy(&out).replace('\n', &format!("\n{indent}"))
}

/// The layout of a container's entries: whether they sit on lines of their own, their
/// indent, and the indent unit.
struct Layout {
    pretty: bool,
    indent: String,
    unit: String,
}

fn layout(text: &str, container: &Node, first_entry: Option<usize>) -> Layout {
    let outer = line_indent(text, container.start).to_owned();
    match first_entry {
        Some(first) => {
            let pretty = text[container.start..first].contains('\n');
            let indent = line_indent(text, first).to_owned();
            let unit = indent
                .strip_prefix(outer.as_str())
                .filter(|u| !u.is_empty())
                .unwrap_or("  ")
                .to_owned();
            Layout {
                pretty,
                indent,
                unit,
            }
        }
        None => Layout {
            pretty: true,
            indent: format!("{outer}  "),
            unit: "  ".to_owned(),
        },
    }
}

/// `text` with `entry` (a member's `"key": value` or an item, laid out by `make`) added
/// at the end of the container `node`, whose entries start at `starts` and end at `ends`.
fn append(
    text: &str,
    node: &Node,
    starts: &[usize],
    ends: &[usize],
    make: impl Fn(&Layout) -> String,
) -> String {
    let lay = layout(text, node, starts.first().copied());
    let mut out = String::with_capacity(text.len() + 256);
    match (starts.len(), ends.last()) {
        (0, _) | (_, None) => {
            let outer = line_indent(text, node.start);
            out.push_str(&text[..=node.start]);
            out.push('\n');
            out.push_str(&lay.indent);
            out.push_str(&make(&lay));
            out.push('\n');
            out.push_str(outer);
            out.push_str(&text[node.end - 1..]);
        }
        (n, Some(&last_end)) => {
            // The gap before the last entry, as it is: `,\n  ` or `, ` or `,`.
            let gap_from = if n >= 2 { ends[n - 2] } else { node.start + 1 };
            let gap = &text[gap_from..starts[n - 1]];
            let sep = gap.find(',').map_or(gap, |i| &gap[i + 1..]);
            out.push_str(&text[..last_end]);
            out.push(',');
            out.push_str(sep);
            out.push_str(&make(&lay));
            out.push_str(&text[last_end..]);
        }
    }
    out
}

/// `text` with the member `key: value` added at the end of the object `obj`.
pub(crate) fn insert_member(text: &str, obj: &Node, key: &str, value: &Value) -> Option<String> {
    let members = obj.members()?;
    let starts: Vec<usize> = members.iter().map(|m| m.key_start).collect();
    let ends: Vec<usize> = members.iter().map(|m| m.value.end).collect();
    // The colon as the last member writes it (`": "`, `":"`).
    let colon = members
        .last()
        .map_or(": ", |m| &text[m.key_end..m.value.start])
        .to_owned();
    let key_text = Value::String(key.to_owned()).to_string();
    Some(append(text, obj, &starts, &ends, |lay| {
        format!(
            "{key_text}{colon}{}",
            render(value, lay.pretty, &lay.indent, &lay.unit)
        )
    }))
}

/// `text` with `value` added as the last item of the array `arr`.
pub(crate) fn append_item(text: &str, arr: &Node, value: &Value) -> Option<String> {
    let items = arr.items()?;
    let starts: Vec<usize> = items.iter().map(|i| i.start).collect();
    let ends: Vec<usize> = items.iter().map(|i| i.end).collect();
    Some(append(text, arr, &starts, &ends, |lay| {
        render(value, lay.pretty, &lay.indent, &lay.unit)
    }))
}

/// `text` without entry `idx` of the container `node` (entries start at `starts`, end at
/// `ends`): with the separator before it, or after it for the first; the last entry leaves
/// `{}` / `[]`. The inverse of [`append`] for the entry it added.
fn remove(text: &str, node: &Node, starts: &[usize], ends: &[usize], idx: usize) -> String {
    let (from, to) = if starts.len() == 1 {
        (node.start + 1, node.end - 1)
    } else if idx > 0 {
        (ends[idx - 1], ends[idx])
    } else {
        (starts[0], starts[1])
    };
    format!("{}{}", &text[..from], &text[to..])
}

/// `text` without member `idx` of the object `obj`.
pub(crate) fn remove_member(text: &str, obj: &Node, idx: usize) -> Option<String> {
    let members = obj.members()?;
    let starts: Vec<usize> = members.iter().map(|m| m.key_start).collect();
    let ends: Vec<usize> = members.iter().map(|m| m.value.end).collect();
    (idx < members.len()).then(|| remove(text, obj, &starts, &ends, idx))
}

/// `text` without item `idx` of the array `arr`.
pub(crate) fn remove_item(text: &str, arr: &Node, idx: usize) -> Option<String> {
    let items = arr.items()?;
    let starts: Vec<usize> = items.iter().map(|i| i.start).collect();
    let ends: Vec<usize> = items.iter().map(|i| i.end).collect();
    (idx < items.len()).then(|| remove(text, arr, &starts, &ends, idx))
}

/// `text` with the value `node` replaced by `value`, laid out like its surroundings.
pub(crate) fn replace_value(text: &str, node: &Node, value: &Value) -> String {
    let indent = line_indent(text, node.start);
    let pretty = text.trim_end().contains('\n');
    let rendered = render(value, pretty, indent, "  ");
    format!("{}{rendered}{}", &text[..node.start], &text[node.end..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip(text: &str, path: &[&str]) {
        let root = parse(text).expect("parse");
        let mut node = &root;
        for key in path {
            node = &node.member(key).expect("member").1.value;
        }
        let added = insert_member(text, node, "skillidx", &json!({"a": [1, 2]})).expect("insert");
        let v: Value = serde_json::from_str(&added).expect("valid");
        let mut inner = &v;
        for key in path {
            inner = &inner[key];
        }
        assert_eq!(inner["skillidx"], json!({"a": [1, 2]}), "{added}");
        let root = parse(&added).expect("parse");
        let mut node = &root;
        for key in path {
            node = &node.member(key).expect("member").1.value;
        }
        let (idx, _) = node.member("skillidx").expect("ours");
        assert_eq!(remove_member(&added, node, idx).expect("remove"), text);
    }

    #[test]
    fn insert_then_remove_restores_the_text() {
        roundtrip("{}", &[]);
        roundtrip("{\"x\": {}}\n", &["x"]);
        roundtrip("{\n  \"a\": 1\n}\n", &[]);
        roundtrip("{\n    \"a\": 1,\n    \"b\": {\"c\": true}\n}", &[]);
        roundtrip("{\"a\":1,\"b\":2}", &[]);
        roundtrip(
            "{ \"a\" : \"x\\\"}\" , \"m\": {\n\t\"k\": null\n} }",
            &["m"],
        );
    }

    #[test]
    fn arrays_append_and_remove() {
        let text = "{\"h\": [\n  1,\n  {\"x\": []}\n]}";
        let root = parse(text).expect("parse");
        let arr = &root.member("h").expect("h").1.value;
        let added = append_item(text, arr, &json!({"y": 1})).expect("append");
        let v: Value = serde_json::from_str(&added).expect("valid");
        assert_eq!(v["h"][2], json!({"y": 1}));
        let root = parse(&added).expect("parse");
        let arr = &root.member("h").expect("h").1.value;
        assert_eq!(remove_item(&added, arr, 2).expect("remove"), text);
    }

    #[test]
    fn not_json_is_none() {
        assert!(parse("{\"a\": 1} x").is_none());
        assert!(parse("{\"a\" 1}").is_none());
        assert!(parse("").is_none());
    }
}
