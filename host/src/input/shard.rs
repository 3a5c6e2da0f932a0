//! `gavel run --shard I/N`: which samples a shard grades. A sample belongs to the shard its id
//! hashes to, so that the shards of a dataset part it whatever order or machine grades them,
//! and `gavel merge` (`run/merge.rs`) finds each sample's result in its shard's folder.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Shard `index` (from 0) of `count`; read back from a `run.json`, checked as `--shard` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Recorded")]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// A shard as a `run.json` records it, before it is checked.
#[derive(Deserialize)]
struct Recorded {
    index: u32,
    count: u32,
}

impl TryFrom<Recorded> for Shard {
    type Error = ShardError;

    fn try_from(recorded: Recorded) -> Result<Shard, ShardError> {
        let written = format!("{}/{}", recorded.index, recorded.count);
        Shard::checked(recorded.index, recorded.count, &written)
    }
}

/// A written `--shard` that is not `I/N` with I below N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not I/N; write e.g. 0/4 for the first of 4")]
    NotIOfN(String),
    #[error("{part} `{number}` of `{written}` is not a whole number ({error})")]
    NotANumber {
        part: &'static str,
        number: String,
        written: String,
        error: std::num::ParseIntError,
    },
    #[error("`{0}`: N must be at least 1")]
    NoShards(String),
    #[error("`{written}`: I counts from 0, so it must be below N (0 to {})", count - 1)]
    PastTheLast { written: String, count: u32 },
}

impl Shard {
    /// `I/N`, `I` from 0 to N - 1 (as Kubernetes' `JOB_COMPLETION_INDEX` counts).
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| ShardError::NotIOfN(text.to_string()))?;
        let number = |number: &str, part| {
            number
                .trim()
                .parse::<u32>()
                .map_err(|error| ShardError::NotANumber {
                    part,
                    number: number.to_string(),
                    written: text.to_string(),
                    error,
                })
        };
        Shard::checked(number(index, "I")?, number(count, "N")?, text)
    }

    /// Shard `index` of `count`, as `written`, when there is such a shard.
    fn checked(index: u32, count: u32, written: &str) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards(written.to_string()));
        }
        if index >= count {
            return Err(ShardError::PastTheLast {
                written: written.to_string(),
                count,
            });
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard of `count` the sample whose id is `key` belongs to: the first 8 bytes of the
/// SHA-256 of the id's UTF-8 text, read as a big-endian unsigned integer, modulo `count`.
pub fn shard_of(key: &str, count: u32) -> u32 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(count)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_documented_one() {
        // sha256("0") = 5feceb66ffc86f38..., sha256("a") = ca978112ca1bbdca...
        assert_eq!(
            shard_of("0", 1000),
            (0x5fec_eb66_ffc8_6f38_u64 % 1000) as u32
        );
        assert_eq!(shard_of("a", 7), (0xca97_8112_ca1b_bdca_u64 % 7) as u32);
        assert_eq!(shard_of("anything", 1), 0);
    }

    #[test]
    fn ids_spread_over_every_shard() {
        let mut sizes = [0u32; 5];
        for id in 0..1000 {
            sizes[shard_of(&id.to_string(), 5) as usize] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 150), "{sizes:?}");
    }

    #[test]
    fn bad_shards_are_refused_with_how_to_write_them() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        let recorded = |text: &str| serde_json::from_str::<Shard>(text).map_err(|e| e.to_string());
        assert_eq!(
            recorded(r#"{"index": 1, "count": 2}"#),
            Ok(Shard { index: 1, count: 2 })
        );
        assert_eq!(
            recorded(r#"{"index": 1, "count": 0}"#),
            Err("`1/0`: N must be at least 1".to_string())
        );
        assert!(
            recorded(r#"{"index": 5, "count": 2}"#)
                .is_err_and(|e| e.starts_with("`5/2`: I counts from 0, so it must be below N")),
        );
        assert!(
            Shard::parse("3/3")
                .unwrap_err()
                .to_string()
                .contains("below N")
        );
        assert!(
            Shard::parse("0/0")
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        assert!(Shard::parse("1").unwrap_err().to_string().contains("I/N"));
        assert!(
            Shard::parse("a/3")
                .unwrap_err()
                .to_string()
                .contains("whole number")
        );
    }
}
