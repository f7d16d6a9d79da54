//! Names-only compaction of the `<available_skills>` block of a system prompt.
