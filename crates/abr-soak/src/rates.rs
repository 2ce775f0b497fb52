//! The chaos layer's rates as one argument (`busy=0.03,crash=0.02,...` or `off`), parsed by
//! the run (to refuse a bad one before anything starts) and by each replica, which turns
//! them into an [`abr_core::chaos::ChaosConfig`] per role.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use abr_core::chaos::ChaosConfig;

/// How often each fault is injected, and how long the slow ones last.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rates {
    /// `(name, rate)` of every fault, in [`NAMES`] order.
    rates: [f64; 9],
    /// How late a slow acquire answers.
    slow: Duration,
    /// How long a slow-steps stall lasts.
    stall: Duration,
    /// An in-lease fault strikes within this of the acquire.
    within: Duration,
}

/// The faults' names, as [`abr_core::chaos::Fault::name`] spells them: the acquire's five,
/// then the lease's four.
const NAMES: [&str; 9] = [
    "busy",
    "unavailable",
    "timeout",
    "hang",
    "slow",
    "crash",
    "freeze",
    "close_page",
    "slow_steps",
];

impl Rates {
    /// The rates a run uses unless told otherwise: every fault, rarely enough that most
    /// work still gets done.
    pub(crate) const DEFAULT: &'static str = "busy=0.03,unavailable=0.03,timeout=0.02,hang=0.01,\
         slow=0.05,crash=0.02,freeze=0.01,close_page=0.02,slow_steps=0.04,\
         slow_ms=1500,stall_ms=2000,within_ms=3000";

    /// The layer's configuration with these rates, drawn from `seed`.
    pub(crate) fn config(&self, seed: u64) -> ChaosConfig {
        let [
            busy,
            unavailable,
            timeout,
            hang,
            slow_rate,
            crash,
            freeze,
            close_page,
            slow_steps,
        ] = self.rates;
        ChaosConfig {
            seed,
            busy,
            unavailable,
            timeout,
            hang,
            slow_rate,
            slow: self.slow,
            crash,
            freeze,
            close_page,
            slow_steps,
            stall: self.stall,
            lease_fault_within: self.within,
        }
    }

    /// Whether no fault is ever injected.
    pub(crate) fn is_off(&self) -> bool {
        self.rates.iter().all(|r| *r == 0.0)
    }
}

impl FromStr for Rates {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut rates = Self {
            rates: [0.0; 9],
            slow: Duration::from_millis(1500),
            stall: Duration::from_millis(2000),
            within: Duration::from_millis(3000),
        };
        if s.trim() == "off" {
            return Ok(rates);
        }
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?}: expected name=value"))?;
            let millis = |value: &str| {
                value
                    .parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| format!("{name}: milliseconds expected, got {value:?}"))
            };
            match name {
                "slow_ms" => rates.slow = millis(value)?,
                "stall_ms" => rates.stall = millis(value)?,
                "within_ms" => rates.within = millis(value)?,
                _ => {
                    let i = NAMES.iter().position(|n| *n == name).ok_or_else(|| {
                        format!("unknown fault {name:?}: one of {}", NAMES.join(", "))
                    })?;
                    let rate: f64 = value
                        .parse()
                        .ok()
                        .filter(|r: &f64| (0.0..=1.0).contains(r))
                        .ok_or_else(|| format!("{name}: a rate from 0 to 1, got {value:?}"))?;
                    rates.rates[i] = rate;
                }
            }
        }
        let (acquire, lease) = rates.rates.split_at(5);
        for (what, part) in [("acquire", acquire), ("lease", lease)] {
            let sum: f64 = part.iter().sum();
            if sum > 1.0 {
                return Err(format!("the {what}'s rates sum to {sum}, more than 1"));
            }
        }
        Ok(rates)
    }
}

impl fmt::Display for Rates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_off() {
            return f.write_str("off");
        }
        for (name, rate) in NAMES.iter().zip(self.rates) {
            write!(f, "{name}={rate},")?;
        }
        write!(
            f,
            "slow_ms={},stall_ms={},within_ms={}",
            self.slow.as_millis(),
            self.stall.as_millis(),
            self.within.as_millis()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_trip_and_bad_ones_are_refused() {
        let rates: Rates = Rates::DEFAULT.parse().unwrap();
        assert_eq!(rates.to_string().parse::<Rates>().unwrap(), rates);
        let config = rates.config(9);
        assert_eq!((config.seed, config.busy, config.crash), (9, 0.03, 0.02));
        assert_eq!(config.stall, Duration::from_secs(2));
        let off: Rates = "off".parse().unwrap();
        assert!(off.is_off());
        assert_eq!(off.to_string(), "off");
        for bad in [
            "busy=2",
            "nope=0.1",
            "busy",
            "busy=0.6,hang=0.6",
            "slow_ms=x",
        ] {
            assert!(bad.parse::<Rates>().is_err(), "{bad}");
        }
    }
}
