//! Why a rule's pattern is no regular expression, in one line.

/// What is wrong with `pattern`, which `regex` refused with `e`, and where:
/// `unclosed group (at character 12 of "(?i)invoice(")`. The crate's own
/// text draws a caret under the pattern on three lines, which the
/// configuration's problems, the log and the editor show with `\n`
/// escapes (they escape what could forge a line: `crate::shown`). An
/// error that is not the pattern's syntax (a compiled size past the
/// limit) is the crate's own words.
pub fn pattern_problem(pattern: &str, e: &regex::Error) -> String {
    let at = |kind: &dyn std::fmt::Display, offset: usize| {
        let n = pattern.get(..offset).map_or(0, |p| p.chars().count()) + 1;
        format!("{kind} (at character {n} of {pattern:?})")
    };
    match regex_syntax::Parser::new().parse(pattern) {
        Err(regex_syntax::Error::Parse(p)) => at(p.kind(), p.span().start.offset),
        Err(regex_syntax::Error::Translate(t)) => at(t.kind(), t.span().start.offset),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::pattern_problem;

    fn problem(p: &str) -> String {
        pattern_problem(p, &regex::Regex::new(p).unwrap_err())
    }

    #[test]
    fn a_bad_pattern_is_told_in_one_line_with_where() {
        assert_eq!(
            problem("(?i)invoice("),
            "unclosed group (at character 12 of \"(?i)invoice(\")"
        );
        assert_eq!(
            problem("a{2,1}"),
            "invalid repetition count range, the start must be <= the end \
             (at character 2 of \"a{2,1}\")"
        );
        // Characters, not bytes.
        assert_eq!(
            problem("é["),
            "unclosed character class (at character 2 of \"é[\")"
        );
        // The translator's errors too (a Unicode class that is none).
        let class = problem(r"ab\p{NoSuchClass}");
        assert!(class.contains("(at character 3 of"), "{class}");
        assert!(!class.contains('\n'), "{class}");
    }

    #[test]
    fn a_pattern_too_big_keeps_the_crates_words() {
        let p = "a{1000}{1000}";
        let e = regex::RegexBuilder::new(p)
            .size_limit(1000)
            .build()
            .unwrap_err();
        let said = pattern_problem(p, &e);
        assert!(said.contains("size limit"), "{said}");
    }
}
