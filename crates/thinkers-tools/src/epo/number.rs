//! Publication numbers: what a model may write, and the epodoc form OPS is asked with.

use std::fmt;

/// A publication number in epodoc form: country code, serial number, optional kind code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicationNumber {
    /// The two-letter country (or organisation) code, for example `EP` or `WO`.
    pub country: String,
    /// The serial number, digits only, for example `1000000` or `2020123456`.
    pub number: String,
    /// The kind code, for example `A1` or `B`, when given.
    pub kind: Option<String>,
}

impl PublicationNumber {
    /// Read a publication number as people write it: `EP1000000A1`, `EP 1 000 000 A1`,
    /// `ep-1000000-a1`, `EP1000000.A1` or `EP1000000` all read the same. Returns `None` for
    /// anything that is not a two-letter code, 1 to 15 digits and an optional kind code (a letter
    /// and at most one digit).
    pub fn parse(raw: &str) -> Option<Self> {
        let compact: String = raw
            .chars()
            .filter(|c| !c.is_whitespace() && !matches!(c, '-' | '.' | ',' | '/'))
            .map(|c| c.to_ascii_uppercase())
            .collect();
        let bytes = compact.as_bytes();
        if bytes.len() < 3 || !bytes[..2].iter().all(u8::is_ascii_uppercase) {
            return None;
        }
        let country = &compact[..2];
        let rest = &compact[2..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=15).contains(&digits) {
            return None;
        }
        let (number, kind) = rest.split_at(digits);
        let kind_ok = match kind.as_bytes() {
            [] => true,
            [l] => l.is_ascii_uppercase(),
            [l, d] => l.is_ascii_uppercase() && d.is_ascii_digit(),
            _ => false,
        };
        kind_ok.then(|| Self {
            country: country.to_owned(),
            number: number.to_owned(),
            kind: (!kind.is_empty()).then(|| kind.to_owned()),
        })
    }

    /// The number as it goes into an OPS epodoc path: `EP1000000.A1`, or `EP1000000` without a
    /// kind code.
    pub fn epodoc(&self) -> String {
        match &self.kind {
            Some(k) => format!("{}{}.{k}", self.country, self.number),
            None => format!("{}{}", self.country, self.number),
        }
    }
}

impl fmt::Display for PublicationNumber {
    /// The compact form, `EP1000000A1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.country,
            self.number,
            self.kind.as_deref().unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_normalise() {
        for raw in [
            "EP1000000A1",
            "ep1000000a1",
            "EP 1 000 000 A1",
            "EP-1000000-A1",
            "EP1000000.A1",
        ] {
            let n = PublicationNumber::parse(raw).unwrap();
            assert_eq!(n.epodoc(), "EP1000000.A1", "{raw}");
            assert_eq!(n.to_string(), "EP1000000A1", "{raw}");
        }
        assert_eq!(
            PublicationNumber::parse("WO2020123456").unwrap().epodoc(),
            "WO2020123456"
        );
        assert_eq!(
            PublicationNumber::parse("EP0700000B")
                .unwrap()
                .kind
                .as_deref(),
            Some("B")
        );
    }

    #[test]
    fn malformed_numbers_are_refused() {
        for raw in [
            "",
            "EP",
            "1000000",
            "E1000000",
            "EPA1",
            "EP1000000A12",
            "EP1000000AB",
            "EP10000X00",
        ] {
            assert!(PublicationNumber::parse(raw).is_none(), "{raw}");
        }
    }
}
