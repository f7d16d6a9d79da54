//! The evaluation as a Markdown table: one row per group, per report the metrics.

use super::metrics::{Metrics, Report};

/// Renders reports side by side as a Markdown table: one row per group (overall, each kind,
/// each language), per report S@1, S@6, P@6, nDCG@6 and MRR@10 (and, for groups of queries
/// that should retrieve nothing, the skills injected per turn).
pub fn table(reports: &[Report]) -> String {
    let mut out = String::from("| group | n |");
    for r in reports {
        let name = column_name(r);
        out.push_str(&format!(
            " {name} S@1 | {name} S@6 | {name} P@6 | {name} nDCG@6 | {name} MRR@10 |"
        ));
    }
    out.push_str("\n|---|---:|");
    for _ in reports {
        out.push_str("---:|---:|---:|---:|---:|");
    }
    out.push('\n');
    let Some(first) = reports.first() else {
        return out;
    };
    let mut rows: Vec<(String, &Metrics)> = vec![("overall".into(), &first.overall)];
    rows.extend(first.by_kind.iter().map(|(k, m)| (format!("kind {k}"), m)));
    rows.extend(first.by_lang.iter().map(|(k, m)| (format!("lang {k}"), m)));
    for (name, m0) in rows {
        let pick = |r: &Report| -> Metrics {
            if name == "overall" {
                r.overall.clone()
            } else if let Some(k) = name.strip_prefix("kind ") {
                r.by_kind.get(k).cloned().unwrap_or_default()
            } else {
                r.by_lang
                    .get(name.trim_start_matches("lang "))
                    .cloned()
                    .unwrap_or_default()
            }
        };
        if m0.queries == 0 {
            out.push_str(&format!("| {name} | {} |", m0.empty_queries));
            for r in reports {
                out.push_str(&format!(
                    " injected {:.2} | | | | |",
                    pick(r).injected_when_empty
                ));
            }
        } else {
            out.push_str(&format!("| {name} | {} |", m0.queries));
            for r in reports {
                let m = pick(r);
                out.push_str(&format!(
                    " {:.1}% | {:.1}% | {:.3} | {:.3} | {:.3} |",
                    100.0 * m.success_at_1,
                    100.0 * m.success_at_6,
                    m.precision_at_6,
                    m.ndcg_at_6,
                    m.mrr_at_10
                ));
            }
        }
        out.push('\n');
    }
    out.push_str("| injected hits not graded | |");
    for r in reports {
        out.push_str(&format!(" {} | | | | |", r.overall.ungraded));
    }
    out.push_str("\n| entries injected / copies named per turn | |");
    for r in reports {
        out.push_str(&format!(
            " {:.2} / {:.2} | | | | |",
            r.overall.injected, r.overall.named
        ));
    }
    out.push('\n');
    out
}

/// A report's name in tables: its home when there are several, then its ranking, or
/// `hybrid` when the semantic stage ran.
pub fn column_name(r: &Report) -> String {
    #[cfg(feature = "semantic")]
    let ranking = if r.hybrid {
        "hybrid".to_owned()
    } else {
        format!("{:?}", r.ranking).to_lowercase()
    };
    #[cfg(not(feature = "semantic"))]
    let ranking = format!("{:?}", r.ranking).to_lowercase();
    if r.home.is_empty() {
        ranking
    } else {
        format!("{} {ranking}", r.home)
    }
}

/// One line per report: chit-chat skills injected per turn, per language.
pub fn chitchat_line(reports: &[Report]) -> String {
    let mut out = String::new();
    for r in reports {
        let name = column_name(r);
        let per: Vec<String> = r
            .chitchat_by_lang
            .iter()
            .map(|(l, m)| format!("{l} {:.2}", m.injected_when_empty))
            .collect();
        out.push_str(&format!(
            "{name}: chit-chat skills injected per turn: {}\n",
            per.join(", ")
        ));
    }
    out
}
