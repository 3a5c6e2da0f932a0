//! The paired tests `gavel diff` reports: McNemar's exact test for pass/fail and Student's t
//! interval for a mean difference, from the regularised incomplete beta function.
//!
//! Written out rather than taken from a statistics crate: the two tests need four functions,
//! and the crates that have them bring linear algebra along. The unit tests hold them to values
//! computed with SciPy 1.17.1 (`scipy.special.betainc`, `scipy.stats.t`, `scipy.stats.binomtest`).

/// `ln Γ(x)` for `x > 0`: Lanczos' approximation (g = 7, nine terms), accurate to about 15
/// significant digits, with the reflection formula below 1/2.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularised incomplete beta function `I_x(a, b)`, for `a, b > 0` and `x` in [0, 1]:
/// its continued fraction (modified Lentz), on whichever side of the mean converges fast.
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * continued_fraction(a, b, x) / a
    } else {
        1.0 - front * continued_fraction(b, a, 1.0 - x) / b
    }
}

fn continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPSILON: f64 = 1e-16;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..10_000 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    h
}

/// `P(T <= t)` for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p`-quantile of Student's t with `df` degrees of freedom, `p` in (0, 1): the root of
/// [`t_cdf`] by bisection, to the last bits that matter for a printed interval.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut low, mut high) = (-1.0, 1.0);
    while t_cdf(low, df) > p {
        low *= 2.0;
    }
    while t_cdf(high, df) < p {
        high *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if mid == low || mid == high {
            break;
        }
        if t_cdf(mid, df) < p {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// `P(X <= k)` for `X ~ Binomial(n, p)`.
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        1.0
    } else {
        beta_inc((n - k) as f64, k as f64 + 1.0, 1.0 - p)
    }
}

/// McNemar's exact test: the two-sided p-value of `b` changes one way against `c` the other,
/// under the hypothesis that either way is as likely (the binomial test of `b` in `b + c` at
/// one half, as `scipy.stats.binomtest(b, b + c).pvalue` gives it). 1 when nothing changed.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    (2.0 * binomial_cdf(b.min(c), n, 0.5)).min(1.0)
}

/// A paired comparison: the mean of the differences, its `level` interval (Student's t with
/// n - 1 degrees of freedom) and the two-sided p-value of the hypothesis that it is 0.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Paired {
    pub n: u64,
    pub mean: f64,
    /// `None` with fewer than two pairs.
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
}

impl Paired {
    /// Whether the change is a measure at all: its mean, interval and p-value are finite
    /// numbers. Scores too large to add up (1e308, say) make them infinite or not a number.
    pub fn measured(&self) -> bool {
        self.mean.is_finite()
            && (self.interval).is_none_or(|[low, high]| low.is_finite() && high.is_finite())
            && self.p_value.is_none_or(f64::is_finite)
    }
}

/// Sums of differences, added one pair at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Differences {
    n: u64,
    /// Welford's running mean and sum of squared deviations: stable however many pairs.
    mean: f64,
    squares: f64,
}

impl Differences {
    pub fn add(&mut self, difference: f64) {
        self.n += 1;
        let delta = difference - self.mean;
        self.mean += delta / self.n as f64;
        self.squares += delta * (difference - self.mean);
    }

    /// The comparison at confidence `level` (0.95 for a 95% interval).
    pub fn paired(&self, level: f64) -> Paired {
        let mut paired = Paired {
            n: self.n,
            mean: if self.n == 0 { 0.0 } else { self.mean },
            interval: None,
            p_value: None,
        };
        if self.n < 2 {
            return paired;
        }
        let df = (self.n - 1) as f64;
        let stderr = (self.squares / df / self.n as f64).sqrt();
        let q = t_quantile(0.5 + level / 2.0, df);
        paired.interval = Some([self.mean - q * stderr, self.mean + q * stderr]);
        paired.p_value = Some(if stderr == 0.0 {
            if self.mean == 0.0 { 1.0 } else { 0.0 }
        } else {
            2.0 * t_cdf(-(self.mean / stderr).abs(), df)
        });
        paired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, relative: f64) {
        let error = (actual - expected).abs() / expected.abs().max(1e-300);
        assert!(
            error <= relative,
            "{actual} is not {expected} (relative error {error:e})"
        );
    }

    #[test]
    fn ln_gamma_matches_known_values() {
        // scipy.special.gammaln
        for (x, expected) in [
            (0.5, 0.572_364_942_924_7),
            (1.0, 0.0),
            (2.5, 0.284_682_870_472_919_2),
            (10.0, 12.801_827_480_081_469),
            (123.456, 469.605_547_129_929_5),
            (0.1, 2.252_712_651_734_206),
        ] {
            assert!((ln_gamma(x) - expected).abs() < 1e-12, "ln_gamma({x})");
        }
    }

    #[test]
    fn the_incomplete_beta_matches_scipy() {
        // scipy.special.betainc(a, b, x)
        for (a, b, x, expected) in [
            (2.0, 3.0, 0.4, 0.524_799_999_999_999_9),
            (0.5, 0.5, 0.1, 0.204_832_764_699_133_4),
            (10.0, 0.5, 0.95, 0.317_151_575_465_544_95),
            (50.0, 60.0, 0.45, 0.464_235_291_430_603_1),
            (1.0, 1.0, 0.3, 0.3),
        ] {
            close(beta_inc(a, b, x), expected, 1e-12);
        }
        assert_eq!(beta_inc(2.0, 3.0, 0.0), 0.0);
        assert_eq!(beta_inc(2.0, 3.0, 1.0), 1.0);
    }

    #[test]
    fn student_t_matches_scipy() {
        // scipy.stats.t.cdf(t, df) and scipy.stats.t.ppf(p, df)
        close(t_cdf(2.0, 5.0), 0.949_030_260_585_070_2, 1e-12);
        close(t_cdf(-1.3, 12.0), 0.109_008_585_541_757_06, 1e-11);
        close(t_cdf(0.0, 3.0), 0.5, 1e-15);
        close(t_quantile(0.975, 1.0), 12.706_204_736_174_694, 1e-10);
        close(t_quantile(0.975, 9.0), 2.262_157_162_798_205, 1e-12);
        close(t_quantile(0.975, 99.0), 1.984_216_951_586_417_4, 1e-12);
        close(t_quantile(0.975, 100_000.0), 1.959_987_707_534_609_5, 1e-10);
        close(t_quantile(0.05, 4.0), -2.131_846_786_326_651, 1e-12);
    }

    #[test]
    fn mcnemar_matches_the_exact_binomial_test() {
        // scipy.stats.binomtest(b, b + c, 0.5).pvalue
        close(mcnemar_exact(2, 9), 0.065_429_687_5, 1e-12);
        close(mcnemar_exact(9, 2), 0.065_429_687_5, 1e-12);
        close(mcnemar_exact(0, 6), 0.031_25, 1e-12);
        close(mcnemar_exact(40, 70), 0.005_447_429_511_444_476, 1e-10);
        close(mcnemar_exact(500, 560), 0.069_909_559_460_269_37, 1e-9);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
    }

    #[test]
    fn a_paired_interval_matches_scipy() {
        // d = [0.1, -0.2, 0.3, 0.0, 0.25, -0.05, 0.4, 0.15]
        // scipy.stats.ttest_1samp(d, 0) and its confidence_interval(0.95)
        let mut differences = Differences::default();
        for d in [0.1, -0.2, 0.3, 0.0, 0.25, -0.05, 0.4, 0.15] {
            differences.add(d);
        }
        let paired = differences.paired(0.95);
        assert_eq!(paired.n, 8);
        close(paired.mean, 0.118_75, 1e-14);
        let [low, high] = paired.interval.unwrap();
        close(low, -0.046_860_387_853_119_356, 1e-10);
        close(high, 0.284_360_387_853_119_35, 1e-10);
        close(paired.p_value.unwrap(), 0.133_793_267_684_106_7, 1e-9);

        let mut one = Differences::default();
        one.add(-1.0);
        assert_eq!(one.paired(0.95).interval, None);
        let mut constant = Differences::default();
        for _ in 0..4 {
            constant.add(-1.0);
        }
        let paired = constant.paired(0.95);
        assert_eq!(paired.interval, Some([-1.0, -1.0]));
        assert_eq!(paired.p_value, Some(0.0));
        assert!(paired.measured());
    }

    #[test]
    fn differences_too_large_to_add_up_are_not_measured() {
        let mut huge = Differences::default();
        for d in [-1e308, 1e308, 1e308] {
            huge.add(d);
        }
        let paired = huge.paired(0.95);
        assert!(paired.mean.is_nan());
        assert!(!paired.measured());
        // A finite mean with an infinite spread is no measure either.
        let mut spread = Differences::default();
        for d in [1e308, 0.0, 1e308] {
            spread.add(d);
        }
        let paired = spread.paired(0.95);
        assert!(paired.mean.is_finite(), "{paired:?}");
        assert!(!paired.measured(), "{paired:?}");
        assert!(Differences::default().paired(0.95).measured());
    }
}
