//! YAML read as Hermes reads it (PyYAML's `safe_load`) where serde_yaml differs in ways that
//! change what a skill is: a key given twice (PyYAML keeps the last, serde_yaml refuses the
//! document) and merge keys (`<<: *base`, which PyYAML applies, in a mapping itself merged
//! too, several in one mapping, a list of them; serde_yaml keeps a key named `<<`). The
//! other YAML 1.1 readings PyYAML has (`yes` as a boolean, `010` as octal) are left as
//! serde_yaml's 1.2 ones; `docs/offer-rules.md` lists them. serde_yaml's limits (128 levels
//! of nesting, a bound on alias expansion) are an error here ([`beyond_limits`]) where
//! PyYAML reads on.

use serde::de::{
    Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_yaml::value::{Tag, TaggedValue};
use serde_yaml::{Mapping, Value};

/// Parses `text` as PyYAML would for the shapes above: the last of repeated keys wins, and
/// merge keys are applied.
pub fn parse(text: &str) -> Result<Value, serde_yaml::Error> {
    let Loose(mut value) = serde_yaml::from_str(text)?;
    merge(&mut value);
    Ok(value)
}

/// Whether `e` is one of serde_yaml's limits (nesting, alias expansion) rather than a
/// document PyYAML would refuse too: PyYAML reads such a document, and what it holds is
/// then unknown here.
pub fn beyond_limits(e: &serde_yaml::Error) -> bool {
    let text = e.to_string();
    text.contains("recursion limit") || text.contains("repetition limit")
}

/// Whether `e` is a syntax error of the YAML scanner or parser (an unclosed quote, a
/// `key: value` where a mapping cannot hold one, a bad indentation, an unknown alias).
/// serde_yaml reads through libyaml, whose scanner and parser PyYAML's follow rule for
/// rule, so PyYAML refuses such a document too and Hermes falls back to its `key: value`
/// reading, as skillidx does. Any other error (a value serde cannot hold, a limit) is one
/// PyYAML may not share.
pub fn refused_by_pyyaml_too(e: &serde_yaml::Error) -> bool {
    let text = e.to_string();
    [
        "while scanning",
        "while parsing",
        "did not find expected",
        "mapping values are not allowed",
        "block sequence entries are not allowed",
        "found unexpected end of stream",
        "found character that cannot start any token",
        "unknown anchor",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// The tag that holds every `<<` of one mapping, in order, until [`merge`] applies them.
const MERGES: &str = "!skillidx-merges";

/// Applies the merge keys of `value`, innermost first, as PyYAML's `flatten_mapping` does:
/// each `<<` in order contributes its mapping (a list contributes its mappings last first),
/// later contributions override earlier ones, and the mapping's own keys override them all.
fn merge(value: &mut Value) {
    match value {
        Value::Sequence(items) => items.iter_mut().for_each(merge),
        Value::Tagged(t) => merge(&mut t.value),
        Value::Mapping(map) => {
            for v in map.values_mut() {
                merge(v);
            }
            let key = Value::String("<<".into());
            let Some(Value::Tagged(merges)) = map.remove(&key) else {
                return;
            };
            let Value::Sequence(merges) = merges.value else {
                return;
            };
            let mut out = Mapping::new();
            for m in merges {
                let parts = match m {
                    Value::Sequence(items) => items.into_iter().rev().collect(),
                    one => vec![one],
                };
                for part in parts {
                    if let Value::Mapping(part) = part {
                        for (k, v) in part {
                            out.insert(k, v);
                        }
                    }
                }
            }
            for (k, v) in std::mem::take(map) {
                out.insert(k, v);
            }
            *map = out;
        }
        _ => {}
    }
}

/// A value whose mappings keep the last of repeated keys.
struct Loose(Value);

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor).map(Loose)
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Loose::deserialize(d).map(|l| l.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Loose(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Sequence(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Mapping::new();
        let mut merges = Vec::new();
        while let Some((Loose(k), Loose(v))) = map.next_entry()? {
            if k.as_str() == Some("<<") {
                merges.push(v);
            } else {
                // PyYAML's mapping: a repeated key takes the later value.
                out.insert(k, v);
            }
        }
        if !merges.is_empty() {
            out.insert(
                Value::String("<<".into()),
                Value::Tagged(Box::new(TaggedValue {
                    tag: Tag::new(MERGES),
                    value: Value::Sequence(merges),
                })),
            );
        }
        Ok(Value::Mapping(out))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, variant): (String, _) = data.variant()?;
        let Loose(value) = variant.newtype_variant()?;
        Ok(Value::Tagged(Box::new(TaggedValue {
            tag: Tag::new(tag),
            value,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
        v.get(key).unwrap_or(&Value::Null)
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let v = parse("name: a\ndescription: first\ndescription: second\n").unwrap();
        assert_eq!(get(&v, "description"), &Value::String("second".into()));
        assert!(serde_yaml::from_str::<Value>("a: 1\na: 2\n").is_err());
    }

    #[test]
    fn syntax_errors_are_told_from_values_pyyaml_reads() {
        let refused = |t: &str| refused_by_pyyaml_too(&parse(t).unwrap_err());
        for t in [
            "tags: [a, \"unclosed]\nname: x\n",
            "description: a: b: c\n",
            "a:\n  - b\n c: d\n",
            "{a: 1\n",
            "a: *nope\n",
            "a: 1\n\t b: 2\n",
        ] {
            assert!(refused(t), "{t:?}: {}", parse(t).unwrap_err());
        }
        // PyYAML reads an integer of any width.
        assert!(!refused("build: 99999999999999999999\n"));
    }

    #[test]
    fn merge_keys_are_applied() {
        let text = "base: &b\n  requires_toolsets: [browser]\nmetadata:\n  hermes:\n    <<: *b\n    tags: [x]\n";
        let v = parse(text).unwrap();
        let hermes = get(get(&v, "metadata"), "hermes");
        assert_eq!(
            get(hermes, "requires_toolsets"),
            &Value::Sequence(vec![Value::String("browser".into())])
        );
        assert_eq!(hermes.get("<<"), None);
    }

    #[test]
    fn every_shape_of_merge_reads_as_pyyaml_reads_it() {
        let hermes = |text: &str| {
            let v = parse(text).unwrap();
            get(get(&v, "metadata"), "hermes").clone()
        };
        let ts = |v: &Value| get(v, "requires_toolsets").clone();
        let browser = Value::Sequence(vec![Value::String("browser".into())]);
        // Two `<<` in one mapping: both apply, the later over the earlier.
        let two = "a: &a\n  requires_toolsets: [browser]\nb: &b\n  tags: [x]\nmetadata:\n  hermes:\n    <<: *a\n    <<: *b\n";
        assert_eq!(ts(&hermes(two)), browser);
        // A list: the first listed wins.
        let list = "a: &a\n  requires_toolsets: [browser]\nb: &b\n  requires_toolsets: []\nmetadata:\n  hermes:\n    <<: [*a, *b]\n";
        assert_eq!(ts(&hermes(list)), browser);
        // A merge inside a mapping that is merged.
        let nested = "a: &a\n  requires_toolsets: [browser]\nb: &b\n  <<: *a\n  tags: [y]\nmetadata:\n  hermes:\n    <<: *b\n";
        assert_eq!(ts(&hermes(nested)), browser);
        // The mapping's own key wins over every merge.
        let own = "a: &a\n  requires_toolsets: [browser]\nmetadata:\n  hermes:\n    <<: *a\n    requires_toolsets: []\n";
        assert_eq!(ts(&hermes(own)), Value::Sequence(vec![]));
        // Beyond serde_yaml's nesting limit: an error that says so.
        let deep = format!("x: {}{}\n", "[".repeat(130), "]".repeat(130));
        assert!(beyond_limits(&parse(&deep).unwrap_err()));
    }

    #[test]
    fn plain_documents_read_as_serde_yaml_reads_them() {
        for text in [
            "name: x\ndescription: >\n  folded\n  text\ntags: [a, b]\nn: 1.5\nt: !custom 3\n",
            "- a\n- {b: null}\n",
            "",
        ] {
            let mine = parse(text).unwrap();
            let theirs: Value = serde_yaml::from_str(text).unwrap();
            assert_eq!(mine, theirs, "{text}");
        }
    }
}
