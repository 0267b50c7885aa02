//! OpenAI `logprobs`: per-token log probabilities of the answer text.
//!
//! The text is cut into pseudo-tokens (a word of letters, digits, `_` and `-` with its leading
//! space, or any other single character with its leading space). Each token gets a deterministic
//! log probability; `top_logprobs` lists the token itself first, then alternatives whose
//! probabilities add up to less than one. When a token is a value the generator chose from a
//! string `enum` (say an option id), the alternatives are the enum's other values and the
//! confidence depends on the answer's quality: that is what a decision-making client reads.

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::schema::EnumChoice;

/// Cuts `text` into pseudo-tokens; concatenated they give `text` back.
pub(crate) fn split_tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    while let Some((i, c)) = chars.next() {
        let mut end = i + c.len_utf8();
        let leading_space = c == ' ';
        let first = if leading_space {
            match chars.peek() {
                Some(&(j, d)) if d != ' ' => {
                    chars.next();
                    end = j + d.len_utf8();
                    d
                }
                _ => c,
            }
        } else {
            c
        };
        if word(first) {
            while let Some(&(j, d)) = chars.peek() {
                if !word(d) {
                    break;
                }
                chars.next();
                end = j + d.len_utf8();
            }
        }
        tokens.push(&text[start..end]);
        start = end;
    }
    tokens
}

fn entry(token: &str, logprob: f64) -> Value {
    json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()})
}

/// The `logprobs.content` entries of `text`, with `top_n` alternatives per token.
pub(crate) fn content_logprobs(
    text: &str,
    top_n: u8,
    choices: &[EnumChoice],
    good: bool,
    rng: &mut StdRng,
) -> Vec<Value> {
    split_tokens(text)
        .into_iter()
        .map(|token| token_logprobs(token, top_n, choices, good, rng))
        .collect()
}

fn token_logprobs(
    token: &str,
    top_n: u8,
    choices: &[EnumChoice],
    good: bool,
    rng: &mut StdRng,
) -> Value {
    let bare = token.trim_start();
    let space = &token[..token.len() - bare.len()];
    let choice = choices.iter().find(|c| c.chosen == bare);
    let (logprob, alternatives): (f64, Vec<String>) = match choice {
        Some(choice) => {
            let confidence: f64 = if good {
                rng.random_range(0.80..0.97)
            } else {
                rng.random_range(0.40..0.60)
            };
            let alts = choice
                .others
                .iter()
                .map(|o| format!("{space}{o}"))
                .collect();
            (confidence.ln(), alts)
        }
        None => {
            let confidence: f64 = rng.random_range(0.85..0.999);
            let alts = [
                bare.to_uppercase(),
                bare.to_lowercase(),
                format!("{bare}s"),
                format!("{bare}."),
                "the".to_owned(),
                "a".to_owned(),
            ]
            .into_iter()
            .filter(|a| a != bare)
            .map(|a| format!("{space}{a}"))
            .collect();
            (confidence.ln(), alts)
        }
    };
    let mut top = Vec::new();
    if top_n > 0 {
        top.push(entry(token, logprob));
        let mut rest = 1.0 - logprob.exp();
        let mut seen = vec![token.to_owned()];
        for alt in alternatives {
            if top.len() >= usize::from(top_n) {
                break;
            }
            if seen.contains(&alt) {
                continue;
            }
            rest *= 0.5;
            top.push(entry(&alt, rest.max(1e-9).ln()));
            seen.push(alt);
        }
    }
    json!({
        "token": token,
        "logprob": logprob,
        "bytes": token.as_bytes(),
        "top_logprobs": top,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn tokens_rebuild_the_text() {
        let text = "Hello, world! {\"pick\":\"opt_b\"} naïve  end";
        let tokens = split_tokens(text);
        assert_eq!(tokens.concat(), text);
        assert!(tokens.contains(&" world"));
        assert!(tokens.contains(&"opt_b"));
    }

    #[test]
    fn enum_tokens_list_the_other_options() {
        let choices = vec![EnumChoice {
            chosen: "opt_b".into(),
            others: vec!["opt_a".into(), "opt_c".into()],
        }];
        let mut rng = StdRng::seed_from_u64(1);
        let entries = content_logprobs("{\"pick\":\"opt_b\"}", 3, &choices, true, &mut rng);
        let pick = entries.iter().find(|e| e["token"] == "opt_b").unwrap();
        let top = pick["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 3);
        assert_eq!(top[0]["token"], "opt_b");
        let names: Vec<&str> = top.iter().map(|t| t["token"].as_str().unwrap()).collect();
        assert!(names.contains(&"opt_a") && names.contains(&"opt_c"));
        let total: f64 = top
            .iter()
            .map(|t| t["logprob"].as_f64().unwrap().exp())
            .sum();
        assert!(total <= 1.0);
        assert!(pick["logprob"].as_f64().unwrap() > 0.8f64.ln());
        assert_eq!(pick["bytes"], json!(b"opt_b".to_vec()));
    }
}
