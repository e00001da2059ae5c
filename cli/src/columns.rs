//! Text padded into columns of any width: `format!`'s `{:<width$}` panics on a width past
//! 65,535, which a task id from a suite or a model id from models.json can reach.

/// `text` followed by spaces up to `width` characters (as `{:<width$}` pads).
pub fn left(text: &str, width: usize) -> String {
    let mut out = String::from(text);
    out.extend(std::iter::repeat_n(
        ' ',
        width.saturating_sub(text.chars().count()),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::left;

    #[test]
    fn pads_as_format_does_and_past_its_limit() {
        for (text, width) in [("", 0), ("ab", 1), ("ab", 5), ("é", 3)] {
            assert_eq!(left(text, width), format!("{text:<width$}"));
        }
        assert_eq!(left("x", 70_000).len(), 70_000);
    }
}
