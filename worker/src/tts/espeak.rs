//! Local speech through the `espeak-ng` command line (Debian's `espeak-ng`): the text on
//! standard input, a WAV file out. No network, no configuration.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use reelfarm_domain::tts::Speech;
use tokio::io::AsyncWriteExt;

use super::{Synthesizer, TtsError};

/// Longest one piece may take to synthesise.
const TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) struct Espeak;

#[async_trait]
impl Synthesizer for Espeak {
    async fn synthesize(&self, speech: &Speech, text: &str, out: &Path) -> Result<(), TtsError> {
        let mut child = tokio::process::Command::new("espeak-ng")
            .arg("-v")
            .arg(&speech.voice)
            .arg("-w")
            .arg(out)
            .arg("--stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| TtsError::Internal(format!("espeak-ng cannot be run: {e}")))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin.write_all(text.as_bytes()).await.map_err(|e| TtsError::Internal(format!("espeak-ng input: {e}")))?;
        drop(stdin);
        let output = tokio::time::timeout(TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| TtsError::Internal(format!("espeak-ng took longer than {} s", TIMEOUT.as_secs())))?
            .map_err(|e| TtsError::Internal(format!("espeak-ng: {e}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(TtsError::Refused(format!("espeak-ng voice {:?}: {}", speech.voice, stderr.trim())));
        }
        Ok(())
    }
}
