//! The fleet's kept sounds: the encoded sound of a render is stored in the blob
//! store under its content key (see `render::sound_cache`), where every worker finds it, so
//! a template's sound is encoded once per fleet rather than once per worker process. The
//! blob's name is the key keyed with the deployment's secret (`sounds/{hmac}`): stored
//! files are served to whoever knows their address, and nobody can compute the address
//! of a sound from its sources.

use std::fmt;

use reelfarm_backends::blob::BlobError;
use reelfarm_backends::Blobs;
use tokio::io::AsyncReadExt;
use tokio::runtime::Handle;

use crate::render::SoundStore;

/// The blob store as the renderer's [`SoundStore`], called from the render's blocking
/// thread through the runtime's handle.
pub(super) struct BlobSounds {
    blobs: Blobs,
    secret: Vec<u8>,
    /// The account whose sounds these are.
    account: String,
    runtime: Handle,
}

impl BlobSounds {
    /// `account`'s kept sounds. Must be called from within the runtime the calls are to
    /// run on.
    pub(super) fn new(blobs: Blobs, secret: Vec<u8>, account: &str) -> BlobSounds {
        BlobSounds { blobs, secret, account: account.to_owned(), runtime: Handle::current() }
    }

    /// Each account keeps its own: a sandboxed child that a hostile source took over
    /// chooses the name of what it hands over, and must not be able to plant a sound in
    /// another account's render.
    fn key(&self, name: &str) -> String {
        let keyed = reelfarm_domain::token::keyed_name(&self.secret, &["reelfarm-sound-v2", &self.account, name]);
        format!("sounds/{keyed}")
    }
}

impl fmt::Debug for BlobSounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BlobSounds")
    }
}

impl SoundStore for BlobSounds {
    fn get(&self, name: &str) -> Option<Vec<u8>> {
        self.runtime.block_on(async {
            let mut read = match self.blobs.get(&self.key(name), None).await {
                Ok(read) => read,
                Err(BlobError::NotFound(_)) => return None,
                Err(e) => {
                    tracing::warn!(error = %e, name, "a kept sound could not be read; encoding it");
                    return None;
                }
            };
            let mut bytes = Vec::with_capacity(read.meta.size as usize);
            match read.body.read_to_end(&mut bytes).await {
                Ok(_) => Some(bytes),
                Err(e) => {
                    tracing::warn!(error = %e, name, "a kept sound could not be read; encoding it");
                    None
                }
            }
        })
    }

    fn put(&self, name: &str, bytes: Vec<u8>) {
        let body = Box::pin(std::io::Cursor::new(bytes));
        let key = self.key(name);
        if let Err(e) = self.runtime.block_on(self.blobs.put(&key, body, "application/octet-stream")) {
            tracing::warn!(error = %e, name, "the sound was not kept for the fleet");
        }
    }
}
