//! Log fields as tracing-subscriber formats them, with every control character escaped.
//! tracing-subscriber escapes ESC, BEL, BS, FF, DEL and C1 controls in field values, but not
//! newlines, carriage returns or tabs: an object name, a Kubernetes error message or a
//! commit message holding "\n" would forge a log line. Escaping the formatted fields covers
//! every field and message at once, whatever code logs it.

use driftd_core::text::escape_control;
use std::fmt;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::FormatFields;

/// [`DefaultFields`], escaped.
#[derive(Debug, Default)]
pub struct EscapedFields(DefaultFields);

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut text = String::new();
        self.0.format_fields(Writer::new(&mut text), fields)?;
        writer.write_str(&escape_control(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn newlines_and_escape_sequences_in_fields_cannot_forge_log_lines() {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(EscapedFields::default())
            .with_ansi(false)
            .without_time()
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let name = "web\n2026-01-01T00:00:00Z  INFO forged\u{1b}[2J";
            tracing::info!(object = %name, paths = ?["/data/a\tb"], "drift detected");
            tracing::warn!("{name}");
        });
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.contains("object=web\\n2026-01-01T00:00:00Z  INFO forged\\x1b[2J"),
            "{text}"
        );
        assert!(text.contains("drift detected"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
