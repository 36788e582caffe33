//! How soon the renders of a job go, among the other renders of the same account
//! (`options.priority`). Accounts share the workers fairly whatever their
//! priorities; drafts (the studio's) go ahead of every batch render.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A job's priority, as the API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 3] = [Priority::Low, Priority::Normal, Priority::High];
    /// The API's names, in the same order.
    pub const NAMES: [&'static str; 3] = ["low", "normal", "high"];
    /// The rank of a draft's render: above every priority a job can be given.
    pub const DRAFT_RANK: i64 = 3;

    pub fn as_str(self) -> &'static str {
        Priority::NAMES[self as usize]
    }

    /// The number the scheduler orders by (higher goes first).
    pub fn rank(self) -> i64 {
        self as i64
    }

    /// The priority of `rank`, the highest for a draft's.
    pub fn from_rank(rank: i64) -> Priority {
        Priority::ALL[rank.clamp(0, 2) as usize]
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Priority {
    type Err = String;

    fn from_str(s: &str) -> Result<Priority, String> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a priority; use one of {}", Priority::NAMES.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ranks_round_trip() {
        for p in Priority::ALL {
            assert_eq!(p.as_str().parse::<Priority>(), Ok(p));
            assert_eq!(Priority::from_rank(p.rank()), p);
        }
        assert_eq!(Priority::from_rank(Priority::DRAFT_RANK), Priority::High);
        assert!(Priority::High > Priority::Normal && Priority::Normal > Priority::Low);
        assert!("urgent".parse::<Priority>().unwrap_err().contains("low, normal, high"));
    }
}
