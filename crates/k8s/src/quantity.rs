//! Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), parsed and printed
//! in kube-apiserver's canonical form so "1000m", "1" and 1 compare equal.
//!
//! The parser mirrors `ParseQuantity`/`parseQuantityString` in apimachinery
//! `pkg/api/resource/quantity.go` and the printer mirrors `MarshalJSON`/`CanonicalizeBytes`,
//! including the quirk that a string already in canonical form is stored verbatim (so "+1"
//! and "010" round-trip unchanged, exactly as kube-apiserver returns them).
//!
//! Limitation: amounts are held as a 128-bit mantissa and a power of ten, so quantities with
//! more than ~38 significant digits (which apimachinery accepts through `inf.Dec`) are
//! rejected as "not a quantity" instead. No real manifest comes near that.

use serde_json::Value;

/// How a quantity was written; decides the suffix family of its canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Power-of-ten suffixes (m, k, M, ...) or none.
    DecimalSI,
    /// Power-of-two suffixes (Ki, Mi, ...).
    BinarySI,
    /// `e`/`E` exponent notation ("1e3").
    DecimalExponent,
}

/// A parsed quantity: exact amount (rounded up to the nano unit like apimachinery), the
/// format it was written in, and the input string when apimachinery keeps it verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    negative: bool,
    /// Amount = mantissa * 10^exp, normalized: no trailing decimal zeros; zero is (0, 0).
    mantissa: u128,
    exp: i32,
    format: Format,
    /// `Quantity.s` in apimachinery: the input, kept when it is already canonical.
    verbatim: Option<String>,
}

/// 2^63 - 1: apimachinery caps BinarySI amounts at the largest int64 (`maxAllowed`).
const MAX_ALLOWED: u128 = i64::MAX as u128;
/// The smallest unit kept; smaller non-zero amounts round up to it (`Nano` in quantity.go).
const NANO_EXP: i32 = -9;

impl Quantity {
    /// The suffix family this quantity was written in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Whether the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative && self.mantissa != 0
    }

    /// Whether two quantities denote the same amount, whatever their spelling.
    pub fn same_amount(&self, other: &Quantity) -> bool {
        self.mantissa == other.mantissa
            && self.exp == other.exp
            && (self.mantissa == 0 || self.negative == other.negative)
    }

    /// The amount as an `f64`, for display and rough arithmetic only.
    pub fn as_f64(&self) -> f64 {
        let v = self.mantissa as f64 * 10f64.powi(self.exp);
        if self.negative {
            -v
        } else {
            v
        }
    }

    /// The sum, as apimachinery's `Quantity.Add`: exact, in the receiver's format unless the
    /// receiver is zero (then the other's). `None` past the 128-bit mantissa.
    pub fn add(&self, other: &Quantity) -> Option<Quantity> {
        let exp = self.exp.min(other.exp);
        let signed = |q: &Quantity| -> Option<i128> {
            let m = 10u128
                .checked_pow((q.exp - exp) as u32)
                .and_then(|p| q.mantissa.checked_mul(p))?;
            let m = i128::try_from(m).ok()?;
            Some(if q.negative { -m } else { m })
        };
        let sum = signed(self)?.checked_add(signed(other)?)?;
        let (mut mantissa, mut exp) = (sum.unsigned_abs(), exp);
        normalize(&mut mantissa, &mut exp);
        Some(Quantity {
            negative: sum < 0,
            mantissa,
            exp,
            format: if self.is_zero() {
                other.format
            } else {
                self.format
            },
            verbatim: None,
        })
    }

    /// Orders two amounts, as apimachinery's `Quantity.Cmp` (spelling aside).
    pub fn cmp_amount(&self, other: &Quantity) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let sign = |q: &Quantity| match (q.mantissa, q.negative) {
            (0, _) => 0,
            (_, true) => -1,
            _ => 1,
        };
        let (sa, sb) = (sign(self), sign(other));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        // Same sign: compare magnitudes at the smaller exponent; a magnitude that overflows
        // when scaled is the larger one.
        let exp = self.exp.min(other.exp);
        let scaled = |q: &Quantity| {
            10u128
                .checked_pow((q.exp - exp) as u32)
                .and_then(|p| q.mantissa.checked_mul(p))
        };
        let magnitude = match (scaled(self), scaled(other)) {
            (Some(a), Some(b)) => a.cmp(&b),
            (None, _) => Ordering::Greater,
            (_, None) => Ordering::Less,
        };
        if sa < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// The amount in units of `10^scale`, rounded up away from zero, as apimachinery's
    /// `ScaledValue` ("ceil(q / 10^scale)"): `scaled_value(0)` is `Value()`,
    /// `scaled_value(-3)` is `MilliValue()`. LimitRanger compares requests and limits in
    /// these units, so an exact amount is not what it sees. `None` past `i128`.
    pub fn scaled_value(&self, scale: i32) -> Option<i128> {
        let shift = self.exp.checked_sub(scale)?;
        let magnitude = if shift >= 0 {
            10u128
                .checked_pow(shift as u32)
                .and_then(|p| self.mantissa.checked_mul(p))?
        } else {
            match 10u128.checked_pow(shift.unsigned_abs()) {
                Some(p) => self.mantissa.div_ceil(p),
                // A divisor past u128 leaves less than one unit: any amount rounds up to 1.
                None => u128::from(self.mantissa != 0),
            }
        };
        let magnitude = i128::try_from(magnitude).ok()?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// The quantity rounded up (away from zero) to a multiple of 1m, as
    /// `SetDefaults_ResourceList` does for every container resource (`RoundUp(-3)`).
    /// Rounding that changes nothing keeps the stored spelling, like apimachinery.
    pub fn rounded_up_to_milli(&self) -> Quantity {
        if self.exp >= -3 {
            return self.clone();
        }
        let p = 10u128.pow((-3 - self.exp) as u32);
        let mut mantissa = self.mantissa.div_ceil(p);
        let mut exp = -3;
        normalize(&mut mantissa, &mut exp);
        Quantity {
            negative: self.negative,
            mantissa,
            exp,
            format: self.format,
            verbatim: None,
        }
    }

    /// The string kube-apiserver would serialize (`Quantity.MarshalJSON`).
    pub fn canonical(&self) -> String {
        if let Some(s) = &self.verbatim {
            return s.clone();
        }
        if self.mantissa == 0 {
            return "0".to_string();
        }
        let sign = if self.negative { "-" } else { "" };
        let format = match self.format {
            Format::BinarySI => {
                // CanonicalizeBytes: small or fractional binary amounts print as DecimalSI
                // "to avoid rounding and hopefully confusion".
                if self.exp < 0 || self.int_magnitude().is_none_or(|v| v < 1024) {
                    Format::DecimalSI
                } else {
                    Format::BinarySI
                }
            }
            f => f,
        };
        if format == Format::BinarySI {
            let mut amount = self.int_magnitude().unwrap_or(MAX_ALLOWED);
            let mut power = 0;
            while amount.is_multiple_of(1024) && power < 6 {
                amount /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{amount}{suffix}");
        }
        // AsCanonicalBytes: lower the exponent to a multiple of three.
        let mut digits = self.mantissa.to_string();
        let mut exp = self.exp;
        while exp % 3 != 0 {
            digits.push('0');
            exp -= 1;
        }
        let suffix = match format {
            Format::DecimalSI => match decimal_suffix(exp) {
                Some(s) => s.to_string(),
                // DecimalSI has no suffix beyond "E": apimachinery falls back to exponent
                // notation ("1e21") rather than dropping the magnitude.
                None => format!("e{exp}"),
            },
            _ if exp == 0 => String::new(),
            _ => format!("e{exp}"),
        };
        format!("{sign}{digits}{suffix}")
    }

    /// The magnitude as an integer, if it is one and fits.
    fn int_magnitude(&self) -> Option<u128> {
        if self.exp < 0 {
            return None;
        }
        10u128
            .checked_pow(self.exp as u32)
            .and_then(|p| self.mantissa.checked_mul(p))
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}

fn decimal_suffix(exp: i32) -> Option<&'static str> {
    Some(match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

/// (base, exponent, format) of a suffix, as `suffixHandler.interpret`.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            // strconv.ParseInt accepts a leading sign.
            let e: i64 = s[1..].parse().ok()?;
            let e = i32::try_from(e).ok()?;
            Some((10, e, Format::DecimalExponent))
        }
        _ => None,
    }
}

struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`: sign, numerator (leading zeros stripped), denominator, suffix.
fn split(s: &str) -> Option<Parts<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    if let Some(&c) = b.first() {
        if c == b'-' {
            positive = false;
            pos += 1;
        } else if c == b'+' {
            pos += 1;
        }
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let zero = Parts {
        positive,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Some(zero);
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return None; // ErrFormatWrong
    }
    Some(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Parses a quantity string ("500m", "1.5Gi", "1e3"); `None` if it is not a quantity.
pub fn parse(s: &str) -> Option<Quantity> {
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(Quantity {
            negative: false,
            mantissa: 0,
            exp: 0,
            format: Format::DecimalSI,
            verbatim: Some("0".into()),
        });
    }
    let parts = split(s)?;
    let (base, exponent, format) = interpret_suffix(parts.suffix)?;
    let digits = format!("{}{}", parts.num, parts.denom);
    let denom_len = i32::try_from(parts.denom.len()).ok()?;
    // Trailing zeros go to the exponent before the digits are read: an amount near u128's
    // limit has canonical forms with more digits than u128 holds ("3402...00100m").
    let significant = digits.trim_end_matches('0');
    let zeros = i32::try_from(digits.len() - significant.len()).ok()?;
    let mut mantissa: u128 = match significant {
        "" => 0,
        digits => digits.parse().ok()?,
    };
    let mut exp = zeros.checked_sub(denom_len)?;
    if base == 10 {
        exp = exp.checked_add(exponent)?;
    } else {
        mantissa = mantissa.checked_mul(1u128.checked_shl(exponent as u32)?)?;
    }
    normalize(&mut mantissa, &mut exp);
    // Round non-zero amounts up (away from zero) to the nano unit: "if you want some
    // resources, you should get some resources".
    if mantissa != 0 && exp < NANO_EXP {
        let shift = (NANO_EXP - exp) as u32;
        mantissa = match 10u128.checked_pow(shift) {
            Some(p) => mantissa.div_ceil(p),
            None => 1,
        };
        exp = NANO_EXP;
        normalize(&mut mantissa, &mut exp);
    }
    if format == Format::BinarySI {
        let too_big = exp >= 0
            && 10u128
                .checked_pow(exp as u32)
                .and_then(|p| mantissa.checked_mul(p))
                .is_none_or(|v| v > MAX_ALLOWED);
        if too_big {
            mantissa = MAX_ALLOWED;
            exp = 0;
        }
    }
    let verbatim = keeps_input(&parts, exponent, format, base).then(|| s.to_string());
    Some(Quantity {
        negative: !parts.positive && mantissa != 0,
        mantissa,
        exp,
        format,
        verbatim,
    })
}

/// The int64 fast path of `ParseQuantity`, which reuses the input string as the stored form
/// when it is already canonical.
fn keeps_input(parts: &Parts<'_>, exponent: i32, format: Format, base: u32) -> bool {
    let len = (parts.num.len() + parts.denom.len()) as i64;
    let shifted = format!("{}{}", parts.num, parts.denom);
    match format {
        Format::BinarySI => {
            debug_assert_eq!(base, 2);
            if exponent < 0 || !parts.denom.is_empty() {
                return false;
            }
            let precision = 15 - parts.num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
            if precision < 0 {
                return false;
            }
            let Ok(value) = shifted.parse::<i64>() else {
                return false;
            };
            if value.checked_mul(1i64 << exponent).is_none() {
                return false;
            }
            exponent % 10 == 0 && value & 0x07 != 0
        }
        _ => {
            let precision = 18 - len;
            let scale = exponent as i64 - parts.denom.len() as i64;
            if precision < 0 || scale < NANO_EXP as i64 || shifted.parse::<i64>().is_err() {
                return false;
            }
            scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
        }
    }
}

fn normalize(mantissa: &mut u128, exp: &mut i32) {
    if *mantissa == 0 {
        *exp = 0;
        return;
    }
    while mantissa.is_multiple_of(10) {
        *mantissa /= 10;
        *exp += 1;
    }
}

/// The canonical string kube-apiserver stores for `s` ("1000m" -> "1", "0.5" -> "500m",
/// "1536Mi" -> "1536Mi"), or `None` if `s` is not a quantity.
pub fn canonicalize(s: &str) -> Option<String> {
    parse(s).map(|q| q.canonical())
}

/// Parses a quantity as it appears in a JSON/YAML document: a string, or a bare number
/// (`cpu: 1`, `memory: 0.5`), with surrounding spaces tolerated like `Quantity.UnmarshalJSON`.
///
/// A number goes through serde_json's printing, so `1e3` written as a bare number arrives as
/// `1000.0` (DecimalSI "1k") where apimachinery would keep the exponent form ("1e3"); the
/// amount is the same.
pub fn parse_value(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => parse(s.trim()),
        Value::Number(n) => parse(&n.to_string()),
        _ => None,
    }
}

/// Canonical form of a JSON quantity value (string or number), or `None` if it is not one.
pub fn canonicalize_value(v: &Value) -> Option<String> {
    parse_value(v).map(|q| q.canonical())
}

/// Whether two quantity strings denote the same amount ("1Gi" and "1024Mi").
/// Strings that are not quantities are equal only if identical.
pub fn equal(a: &str, b: &str) -> bool {
    match (parse(a.trim()), parse(b.trim())) {
        (Some(x), Some(y)) => x.same_amount(&y),
        _ => a == b,
    }
}

/// [`equal`] for JSON values (strings or numbers).
pub fn equal_values(a: &Value, b: &Value) -> bool {
    match (parse_value(a), parse_value(b)) {
        (Some(x), Some(y)) => x.same_amount(&y),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(s: &str) -> String {
        canonicalize(s).unwrap_or_else(|| panic!("{s:?} should parse"))
    }

    #[test]
    fn sums_and_order_follow_the_amounts() {
        // Hand-derived from `Quantity.Add`/`Cmp` in apimachinery `pkg/api/resource/
        // quantity.go`: exact sums that keep the first operand's format (unless it is zero),
        // comparison by amount.
        let q = |s: &str| parse(s).unwrap();
        assert_eq!(q("500Mi").add(&q("1000Mi")).unwrap().canonical(), "1500Mi");
        assert_eq!(q("100m").add(&q("1")).unwrap().canonical(), "1100m");
        assert_eq!(q("0").add(&q("1Ki")).unwrap().canonical(), "1Ki");
        assert_eq!(q("1").add(&q("-1")).unwrap().canonical(), "0");
        use std::cmp::Ordering::*;
        for (a, b, want) in [
            ("1Gi", "1024Mi", Equal),
            ("1Gi", "1G", Greater),
            ("99m", "0.1", Less),
            ("-1", "0", Less),
            ("-2", "-1", Less),
            ("0", "0m", Equal),
        ] {
            assert_eq!(q(a).cmp_amount(&q(b)), want, "{a} vs {b}");
        }
    }

    #[test]
    fn scaled_values_round_up_like_apimachinery() {
        // Hand-derived from `ScaledValue`'s rule in apimachinery `pkg/api/resource/
        // quantity.go` ("ceil(q / 10^scale)"), `Value()` = scale 0, `MilliValue()` = -3.
        for (input, scale, want) in [
            ("1Gi", 0, 1_073_741_824),
            ("1Gi", -3, 1_073_741_824_000),
            ("100m", 0, 1),
            ("100m", -3, 100),
            ("1.5", -3, 1500),
            ("1n", -3, 1),
            ("0", -3, 0),
            ("2k", 3, 2),
            ("2500", 3, 3),
        ] {
            assert_eq!(
                parse(input).unwrap().scaled_value(scale),
                Some(want),
                "{input} at 10^{scale}"
            );
        }
        assert_eq!(parse("1E").unwrap().scaled_value(-30), None, "past i128");
    }

    #[test]
    fn a_canonical_form_with_more_digits_than_u128_holds_parses_again() {
        // Found by fuzz_quantity_parser: the amount fits, its milli form's 39 digits do not.
        let q = parse("340283000000000000.0000000000000000001E").unwrap();
        let canonical = q.canonical();
        assert!(canonical.len() > 39, "{canonical}");
        let again = parse(&canonical).expect("the canonical form parses");
        assert!(again.same_amount(&q));
        assert_eq!(again.canonical(), canonical);
    }

    #[test]
    fn canonical_forms_from_the_task_and_apimachinery_parse_emit() {
        // TestQuantityParseEmit + the forms kube-apiserver returns for common manifests.
        for (input, want) in [
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("100M", "100M"),
            ("0.1", "100m"),
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("250m", "250m"),
            ("2000m", "2"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("1500", "1500"),
            ("2048Ki", "2Mi"),
            ("512Mi", "512Mi"),
            ("0.5Ki", "512"),
            ("0.5Gi", "512Mi"),
        ] {
            assert_eq!(canon(input), want, "canonical form of {input:?}");
        }
    }

    #[test]
    fn string_forms_of_test_quantity_string() {
        // (expected canonical, alternate spelling) pairs from TestQuantityString.
        for (canonical, alternate) in [
            ("1Gi", "1024Mi"),
            ("300Mi", "307200Ki"),
            ("1001Gi", "1025024Mi"),
            ("1Ti", "1024Gi"),
            ("5", "5000m"),
            ("500m", "0.5"),
            ("1G", "1000M"),
            ("1G", "0.001T"),
            ("1m", "1000u"),
            ("1080m", "1.08"),
            ("1080m", "1080000000n"),
            ("1e21", "1000E"),
            ("5e21", "5000E"),
            ("1e24", "1000000E"),
            ("1e9", ".001e12"),
            ("1e-3", "0.001e0"),
            ("1e-9", "1000e-12"),
            ("0", "00"),
        ] {
            assert_eq!(
                canon(canonical),
                canonical,
                "{canonical:?} is stored verbatim"
            );
            assert_eq!(canon(alternate), canonical, "{alternate:?} canonicalizes");
        }
        for kept in [
            "6Ki", "80m", "300M", "1T", "1E", "1234567M", "3k", "1025", "80e-3", "300e6", "1e12",
            "1e3", "3e3", "1n", "80n", "1080n", "1u", "80u", "1080u",
        ] {
            assert_eq!(canon(kept), kept);
        }
    }

    #[test]
    fn exponent_forms_keep_exponent_notation() {
        // DecimalExponent quantities stay in e-notation (TestQuantityString: 1e3 -> "1e3").
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("1E3"), "1E3"); // canonical already: kept verbatim
        assert_eq!(canon("1.5e3"), "1500");
        assert_eq!(canon("1.3E+6"), "1300e3");
        assert_eq!(canon("0.5e-1"), "50e-3");
        assert!(equal("1e3", "1k"));
        assert!(equal("1E-3", "1m"));
    }

    #[test]
    fn amounts_from_test_quantity_parse() {
        // (input, amount as written in TestQuantityParse's decQuantity(value, scale)).
        for (input, same_as) in [
            ("0n", "0"),
            ("0Ki", "0"),
            ("0Mi", "0"),
            ("8Ki", "8192"),
            ("3Ei", "3458764513820540928"),
            ("50k", "50000"),
            ("40T", "40000000000000"),
            ("100.035k", "100035"),
            ("0.0005k", "500m"),
            ("0.00050k", "500m"),
            ("10.035M", "10035k"),
            ("1.2e3", "1200"),
            ("1.40e9", "1400M"),
            ("1.7E18", "1700P"),
            ("6.987654321G", "6987654321"),
            ("1.01E", "1010P"),
            ("3.001n", "4n"),
            ("1.1E-9", "2n"),
            ("0.0000000001", "1n"),
            ("0.0000000005", "1n"),
            ("0.5e-9", "1n"),
            ("0.9n", "1n"),
            ("0.00000012345", "124n"),
            ("0.00000012354", "124n"),
            ("9Ei", "9223372036854775807"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("12E", "12000P"),
            ("100.035Ki", "102435840m"),
            ("0.5Mi", "512Ki"),
            ("0.05Gi", "53687091200m"),
            ("0.025Ti", "27487790694400m"),
            (".001", "1m"),
            (".0001k", "100m"),
            ("1.", "1"),
            ("1.G", "1G"),
            (".", "0"),
            ("-.", "0"),
        ] {
            let (a, b) = (parse(input), parse(same_as));
            assert!(a.is_some(), "{input:?} parses");
            assert!(
                a.unwrap().same_amount(&b.unwrap()),
                "{input:?} has the amount of {same_as:?}"
            );
        }
    }

    #[test]
    fn signs() {
        assert_eq!(canon("-1000m"), "-1");
        assert_eq!(canon("-1.5Gi"), "-1536Mi");
        assert_eq!(canon("-0.5"), "-500m");
        assert_eq!(canon("-0"), "0");
        assert!(equal("+1", "1"));
        assert!(equal("-0", "0"));
        assert!(!equal("-1", "1"));
        // The int64 fast path stores an already-canonical input verbatim, sign included.
        assert_eq!(canon("+1"), "+1");
        assert_eq!(canon("-9010m"), "-9010m");
        assert_eq!(canon("-.000000000001Ki"), "-2n");
    }

    #[test]
    fn invalid_inputs_from_test_quantity_parse() {
        for bad in [
            "",
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            " 1",
            "1 ",
            "1e",
            "1kb",
            "1GGi",
            "1Gb",
            "1e2.3",
            "Non-Numeric",
            "1KI",
        ] {
            assert_eq!(parse(bad), None, "{bad:?} must not parse");
        }
    }

    #[test]
    fn json_numbers_and_whitespace() {
        // TestJSONWhitespace: numbers and padded strings are accepted in documents.
        assert_eq!(canonicalize_value(&json!(1)).as_deref(), Some("1"));
        assert_eq!(canonicalize_value(&json!(10)).as_deref(), Some("10"));
        assert_eq!(canonicalize_value(&json!(-1)).as_deref(), Some("-1"));
        assert_eq!(canonicalize_value(&json!(" 1")).as_deref(), Some("1"));
        assert_eq!(canonicalize_value(&json!("1 ")).as_deref(), Some("1"));
        assert_eq!(canonicalize_value(&json!(0.5)).as_deref(), Some("500m"));
        assert_eq!(canonicalize_value(&json!(2.5)).as_deref(), Some("2500m"));
        assert_eq!(canonicalize_value(&json!(true)), None);
        assert!(equal_values(&json!(1), &json!("1000m")));
        assert!(equal_values(&json!("1Gi"), &json!("1024Mi")));
        assert!(!equal_values(&json!("1G"), &json!("1Gi")));
    }

    #[test]
    fn equality_compares_amounts() {
        assert!(equal("1Gi", "1024Mi"));
        assert!(equal("1", "1000m"));
        assert!(equal("0.1", "100m"));
        assert!(equal("1k", "1000"));
        assert!(!equal("1G", "1Gi"));
        assert!(!equal("100m", "50m"));
        assert!(!equal("10000T", "100Gi"));
        assert!(equal("not-a-quantity", "not-a-quantity"));
        assert!(!equal("not-a-quantity", "1"));
    }

    #[test]
    fn resource_lists_round_up_to_milli() {
        let r = |s: &str| parse(s).unwrap().rounded_up_to_milli().canonical();
        assert_eq!(r("100m"), "100m");
        assert_eq!(r("500u"), "1m");
        assert_eq!(r("1001u"), "2m");
        assert_eq!(r("1n"), "1m");
        assert_eq!(r("-1n"), "-1m");
        assert_eq!(r("1Gi"), "1Gi");
        assert_eq!(r("+1"), "+1");
    }

    proptest::proptest! {
        /// What kube-apiserver stores parses back to itself and keeps the amount.
        #[test]
        fn canonical_form_is_stable_and_keeps_the_amount(
            sign in proptest::sample::select(vec!["", "-", "+"]),
            int in 0u64..10_000_000,
            frac in proptest::option::of(0u32..1000),
            suffix in proptest::sample::select(vec![
                "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi",
                "e3", "e-3", "E6", "e0",
            ]),
        ) {
            let input = match frac {
                Some(f) => format!("{sign}{int}.{f:03}{suffix}"),
                None => format!("{sign}{int}{suffix}"),
            };
            let q = parse(&input).expect("well-formed quantity");
            let c = q.canonical();
            let again = parse(&c).expect("canonical form parses");
            proptest::prop_assert_eq!(again.canonical(), c.clone(), "{} -> {}", input, c);
            // Rounding to nano happens once, on the first parse.
            proptest::prop_assert!(again.same_amount(&q), "{} -> {}", input, c);
        }
    }

    #[test]
    fn format_of_suffix_family() {
        assert_eq!(parse("1Gi").unwrap().format(), Format::BinarySI);
        assert_eq!(parse("1G").unwrap().format(), Format::DecimalSI);
        assert_eq!(parse("1e9").unwrap().format(), Format::DecimalExponent);
        assert_eq!(parse("1E").unwrap().format(), Format::DecimalSI);
        assert!(parse("-1").unwrap().is_negative());
        assert!(parse("0Gi").unwrap().is_zero());
        assert_eq!(parse("1.5k").unwrap().as_f64(), 1500.0);
    }
}
