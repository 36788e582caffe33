//! The animated GIF: one palette made for the whole video, then every frame
//! mapped to it with dithering — libavfilter's `palettegen` and `paletteuse`, the pair the
//! ffmpeg CLI is used with, in process.
//!
//! Two passes without composing twice: while frames arrive, each is converted to BGRA at
//! the GIF's size, counted into the palette's statistics and spooled raw to a file beside
//! the output (memory stays at a frame however long the video); at the end the palette
//! is made and the spooled frames are read back and mapped on one thread while this one
//! encodes them.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg::{codec, encoder, ffi, filter, frame, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::encode::{fill_frame, time_base};
use super::picture::Picture;
use super::RenderError;
use crate::media::mux::Muxer;
use crate::media::MediaError;

/// The palette: every colour counted over the whole video, all 256 entries for colours
/// (the video is opaque: none reserved for transparency).
pub(crate) const PALETTEGEN: &str = "palettegen=stats_mode=full:reserve_transparent=0";
/// The mapping: Sierra-2-4A error diffusion, the filter's default dither.
pub(crate) const PALETTEUSE: &str = "paletteuse=dither=sierra2_4a";
/// Mapped frames in flight between the mapping thread and the encoder.
const QUEUE: usize = 4;

/// Writes a GIF of the canvases pushed to it.
pub(crate) struct GifEncoder {
    path: PathBuf,
    spool_path: PathBuf,
    spool: BufWriter<File>,
    width: u32,
    height: u32,
    fps: u32,
    /// Canvas (YUV 4:2:0, BT.709 limited) to BGRA at the GIF's size.
    scaler: scaling::Context,
    yuv: frame::Video,
    palettegen: filter::Graph,
    frames: i64,
}

impl GifEncoder {
    /// A GIF of `width` × `height` at `fps` into `path`, from canvases of `canvas` size.
    pub(crate) fn start(
        path: &Path,
        canvas: (u32, u32),
        width: u32,
        height: u32,
        fps: u32,
    ) -> Result<Self, RenderError> {
        crate::media::av::init();
        let spool_path = path.with_extension("frames");
        let spool = BufWriter::new(File::create(&spool_path)?);
        let mut scaler = scaling::Context::get(
            Pixel::YUV420P,
            canvas.0,
            canvas.1,
            Pixel::BGRA,
            width,
            height,
            scaling::Flags::BICUBIC,
        )
        .map_err(failed("the GIF's scaler"))?;
        // SAFETY: a live context; the coefficient tables are static in libswscale.
        unsafe {
            let bt709 = ffi::sws_getCoefficients(ffi::SWS_CS_ITU709);
            let full = ffi::sws_getCoefficients(ffi::SWS_CS_DEFAULT);
            ffi::sws_setColorspaceDetails(scaler.as_mut_ptr(), bt709, 0, full, 1, 0, 1 << 16, 1 << 16);
        }
        let palettegen = graph(&[("in", width, height)], fps, PALETTEGEN)?;
        Ok(GifEncoder {
            path: path.to_path_buf(),
            spool_path,
            spool,
            width,
            height,
            fps,
            scaler,
            yuv: frame::Video::new(Pixel::YUV420P, canvas.0, canvas.1),
            palettegen,
            frames: 0,
        })
    }

    /// Adds the next frame.
    pub(crate) fn push(&mut self, canvas: &Picture) -> Result<(), RenderError> {
        fill_frame(&mut self.yuv, canvas)?;
        // The filter takes the frame's buffer: a fresh one each time.
        let mut bgra = frame::Video::new(Pixel::BGRA, self.width, self.height);
        self.scaler.run(&self.yuv, &mut bgra).map_err(failed("scaling a GIF frame"))?;
        let row = self.width as usize * 4;
        let stride = bgra.stride(0);
        for line in bgra.data(0).chunks(stride).take(self.height as usize) {
            self.spool.write_all(&line[..row])?;
        }
        bgra.set_pts(Some(self.frames));
        self.frames += 1;
        add(&mut self.palettegen, "in", Some(&bgra), "counting colours")?;
        // Asking for output runs the graph: palettegen counts the frame and lets it go
        // (its palette comes at the end). Given frames only, the graph would queue every
        // one of them until then: a 10-minute GIF held 10 minutes of frames in memory.
        pull(&mut self.palettegen, &mut frame::Video::empty());
        Ok(())
    }

    /// Makes the palette, maps every spooled frame to it and writes the GIF; `go_on` is
    /// told the frames written after each one (a cancelled or overdue render stops
    /// there).
    pub(crate) fn finish(mut self, go_on: &dyn Fn(u64) -> Result<(), RenderError>) -> Result<(), RenderError> {
        self.spool.flush()?;
        add(&mut self.palettegen, "in", None, "making the palette")?;
        let mut palette = frame::Video::empty();
        if !pull(&mut self.palettegen, &mut palette) {
            return Err(RenderError::Internal("palettegen made no palette".into()));
        }
        self.encode(palette, go_on)
    }

    /// Maps the spooled frames to `palette` on a thread of its own while this one encodes
    /// and writes what it mapped (the two halves of the second pass overlap).
    fn encode(
        &mut self,
        palette: frame::Video,
        go_on: &dyn Fn(u64) -> Result<(), RenderError>,
    ) -> Result<(), RenderError> {
        let mut encoder = open_gif(self.width, self.height, self.fps)?;
        let mut muxer = Muxer::create(&self.path, "gif")?;
        let index = muxer.add_stream(&encoder, time_base(self.fps), None)?;
        muxer.start()?;
        let (size, fps, frames, spool) = ((self.width, self.height), self.fps, self.frames, self.spool_path.clone());
        std::thread::scope(|scope| {
            let (mapped_tx, mapped_rx) = mpsc::sync_channel::<frame::Video>(QUEUE);
            let mapper = std::thread::Builder::new()
                .name("render-gif-map".into())
                .spawn_scoped(scope, move || map_frames(&spool, size, fps, frames, palette, &mapped_tx))
                .map_err(RenderError::Io)?;
            for (written, mapped) in (1..).zip(mapped_rx) {
                encode_frame(&mut encoder, Some(&mapped), &mut muxer, index)?;
                // Leaving drops the receiver: the mapping thread stops at its next frame.
                go_on(written)?;
            }
            mapper.join().map_err(|_| RenderError::Internal("the GIF's mapping thread crashed".into()))?
        })?;
        encode_frame(&mut encoder, None, &mut muxer, index)?;
        muxer.finish()?;
        Ok(())
    }
}

impl Drop for GifEncoder {
    /// The spooled frames go with the encoder, finished or not.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.spool_path);
    }
}

/// Reads the `frames` spooled BGRA frames of `size` back, maps them to `palette` and
/// sends the palette frames to `out` (stops early when it is gone).
fn map_frames(
    spool: &Path,
    (width, height): (u32, u32),
    fps: u32,
    frames: i64,
    palette: frame::Video,
    out: &mpsc::SyncSender<frame::Video>,
) -> Result<(), RenderError> {
    let sources = [("in", width, height), ("pal", palette.width(), palette.height())];
    let mut mapping = graph(&sources, fps, PALETTEUSE)?;
    add(&mut mapping, "pal", Some(&palette), "using the palette")?;
    add(&mut mapping, "pal", None, "using the palette")?;
    let mut spool = BufReader::new(File::open(spool)?);
    let row = width as usize * 4;
    let send_mapped = |mapping: &mut filter::Graph| {
        let mut mapped = frame::Video::empty();
        while pull(mapping, &mut mapped) {
            if out.send(std::mem::replace(&mut mapped, frame::Video::empty())).is_err() {
                return false;
            }
        }
        true
    };
    for n in 0..frames {
        let mut bgra = frame::Video::new(Pixel::BGRA, width, height);
        let stride = bgra.stride(0);
        for line in bgra.data_mut(0).chunks_mut(stride).take(height as usize) {
            spool.read_exact(&mut line[..row])?;
        }
        bgra.set_pts(Some(n));
        add(&mut mapping, "in", Some(&bgra), "mapping a GIF frame")?;
        if !send_mapped(&mut mapping) {
            return Ok(());
        }
    }
    add(&mut mapping, "in", None, "mapping the last GIF frames")?;
    send_mapped(&mut mapping);
    Ok(())
}

/// A filter graph from buffer sources (name, size; BGRA, `fps` time base) through `spec`
/// to one sink.
fn graph(sources: &[(&str, u32, u32)], fps: u32, spec: &str) -> Result<filter::Graph, RenderError> {
    let mut graph = filter::Graph::new();
    let found = |name: &str| filter::find(name).ok_or_else(|| RenderError::Internal(format!("no {name} filter")));
    for (name, w, h) in sources {
        let args = format!("video_size={w}x{h}:pix_fmt=bgra:time_base=1/{fps}:pixel_aspect=1/1");
        graph.add(&found("buffer")?, name, &args).map_err(failed("a filter source"))?;
    }
    graph.add(&found("buffersink")?, "out", "").map_err(failed("a filter sink"))?;
    let labels: String = sources.iter().map(|(name, _, _)| format!("[{name}]")).collect();
    let mut parser = graph.input("out", 0).map_err(failed("the filter graph"))?;
    for (name, _, _) in sources {
        parser = parser.output(name, 0).map_err(failed("the filter graph"))?;
    }
    parser.parse(&format!("{labels}{spec}[out]")).map_err(failed("the filter graph"))?;
    graph.validate().map_err(failed("the filter graph"))?;
    Ok(graph)
}

/// Gives `frame` to the graph's source `name`; `None` ends its input.
fn add(graph: &mut filter::Graph, name: &str, frame: Option<&frame::Video>, what: &str) -> Result<(), RenderError> {
    let mut context = graph.get(name).ok_or_else(|| RenderError::Internal(format!("no filter {name}")))?;
    let mut source = context.source();
    match frame {
        Some(frame) => source.add(frame),
        None => source.flush(),
    }
    .map_err(failed(what))
}

/// The next frame out of the graph's sink, if one is ready.
fn pull(graph: &mut filter::Graph, frame: &mut frame::Video) -> bool {
    graph.get("out").is_some_and(|mut context| context.sink().frame(frame).is_ok())
}

/// The GIF encoder for palette frames.
fn open_gif(width: u32, height: u32, fps: u32) -> Result<encoder::Video, RenderError> {
    let codec = encoder::find_by_name("gif").ok_or_else(|| RenderError::Internal("no GIF encoder".into()))?;
    let mut ctx =
        codec::context::Context::new_with_codec(codec).encoder().video().map_err(failed("the GIF encoder"))?;
    ctx.set_width(width);
    ctx.set_height(height);
    ctx.set_format(Pixel::PAL8);
    ctx.set_time_base(time_base(fps));
    ctx.set_frame_rate(Some(Rational(i32::try_from(fps).unwrap_or(30), 1)));
    ctx.open_as(codec).map_err(failed("opening the GIF encoder"))
}

/// Encodes `frame` (its pts in frames; `None` flushes) and writes what comes out, each
/// packet lasting one frame.
fn encode_frame(
    encoder: &mut encoder::Video,
    frame: Option<&frame::Video>,
    muxer: &mut Muxer,
    index: usize,
) -> Result<(), RenderError> {
    match frame {
        Some(frame) => encoder.send_frame(frame),
        None => encoder.send_eof(),
    }
    .map_err(failed("encoding a GIF frame"))?;
    let mut packet = Packet::empty();
    while encoder.receive_packet(&mut packet).is_ok() {
        let mut out = std::mem::replace(&mut packet, Packet::empty());
        out.set_duration(1);
        muxer.write(index, out)?;
    }
    Ok(())
}

fn failed(what: &str) -> impl Fn(ffmpeg::Error) -> RenderError + '_ {
    move |e| RenderError::from(MediaError::Internal(format!("{what}: {e}")))
}
