"""From base64 text to an image the model APIs take, or a message saying why not.

PNG, JPEG, GIF and WebP (what the Messages, Chat Completions and Responses
APIs all take) are recognised by their first bytes and pass through
untouched. Anything else is opened with Pillow, imported only here and only
then, and written as PNG; without Pillow, a raster format Pillow would
read is named with the extra that converts it. Bytes that are no image are
described (text, an SVG, a PDF) so the model knows what it holds.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from typing import Any

from . import MAX_IMAGE_BYTES

__all__ = ["MAX_PIXELS", "MAX_SOURCE_BYTES", "NotShown", "Shown", "decode_base64", "image_for_model"]

MAX_SOURCE_BYTES = 24 * 1024 * 1024
"""The most bytes ShowImage decodes at all (a TIFF may be far larger than its PNG)."""
MAX_PIXELS = 25_000_000
"""The most pixels ShowImage converts: 100 MB of RGBA in memory, and past what the model APIs show
without scaling down (the Messages API scales anything over 1.15 megapixels)."""

PASS_THROUGH = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "PNG"),
    (b"\xff\xd8\xff", "image/jpeg", "JPEG"),
    (b"GIF87a", "image/gif", "GIF"),
    (b"GIF89a", "image/gif", "GIF"),
)

# Raster formats Pillow reads, by their first bytes: named when Pillow is
# missing, so the model (and the operator) learn what would convert them.
OTHER_RASTER = (
    (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"BM", "BMP"), (b"\x00\x00\x01\x00", "ICO"),
    (b"qoif", "QOI"), (b"8BPS", "PSD"), (b"DDS ", "DDS"), (b"icns", "ICNS"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JPEG 2000"), (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"#?RADIANCE", "HDR"), (b"#?RGBE", "HDR"), (b"v/1\x01", "OpenEXR"), (b"farbfeld", "Farbfeld"),
)
_PNM = re.compile(rb"P[1-7]\s")
_DATA_URL = re.compile(r"data:([\w.+/-]*)(;[\w=.+-]*)*?;base64,", re.ASCII)
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}", re.ASCII)
# PNG keeps these modes as they are; others are converted first.
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I;16"})


class NotShown(Exception):
    """The bytes cannot be shown; the message says why and what to do, for the model."""


class Shown:
    """An image the model APIs take: its bytes base64-encoded, its media type, and how it was made."""

    def __init__(self, data: str, mime_type: str, size: int, note: str) -> None:
        self.data = data
        self.mime_type = mime_type
        self.size = size
        self.note = note


def decode_base64(text: str, source: str) -> bytes:
    """The bytes ``text`` encodes: whitespace and a ``data:`` URL prefix
    allowed, padding optional, the URL-safe alphabet too. ``source`` names
    where the text came from, for the message when it is no base64."""
    found = _DATA_URL.match(text.lstrip())
    body = (text.lstrip()[found.end():] if found else text).strip()
    # Encoders wrap lines (base64 at 76, MIME with CRLF) but never put a space
    # inside a line: text with spaces is prose, whatever it would decode to.
    compact = body.replace("\r", "").replace("\n", "")
    if not compact:
        raise NotShown(f"{source} is empty: there is no image in it.")
    if len(compact) > MAX_SOURCE_BYTES * 4 // 3 + 4:
        raise NotShown(f"{source} holds about {len(compact) * 3 // 4:,} bytes, more than the "
                       f"{MAX_SOURCE_BYTES:,} ShowImage reads; make the image smaller before encoding it.")
    if not _BASE64.fullmatch(compact):
        bad = next(c for c in compact if not (c.isascii() and (c.isalnum() or c in "+/_-=")))
        raise NotShown(f"{source} holds text, not base64-encoded image bytes (it has {bad!r}, which base64 never "
                       f"does; it begins {_clip(body, 60)!r}). ShowImage shows image bytes saved base64-encoded: "
                       "run the command with `| base64 -w0` and the scratchpad parameter, then call ShowImage "
                       "again.")
    compact = compact.rstrip("=")
    if len(compact) % 4 == 1:
        raise NotShown(f"{source} is not whole base64: its length leaves a stray character, so it was cut short "
                       "or joined with something else.")
    padded = compact + "=" * (-len(compact) % 4)
    try:
        if "-" in padded or "_" in padded:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise NotShown(f"{source} is not valid base64 ({exc}).") from None


def image_for_model(data: bytes, source: str) -> Shown:
    """``data`` as an image the model APIs take (passed through, or converted
    to PNG), or ``NotShown`` saying why not."""
    for magic, mime, name in PASS_THROUGH:
        if data.startswith(magic):
            return _capped(Shown(base64.b64encode(data).decode("ascii"), mime, len(data), name), source)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _capped(Shown(base64.b64encode(data).decode("ascii"), "image/webp", len(data), "WebP"), source)
    _refuse_non_images(data, source)
    try:
        import PIL  # noqa: F401  (the images extra)
    except ImportError:
        kind = _other_raster(data)
        if kind is not None:
            raise NotShown(f"{source} is a {kind} image. ShowImage passes PNG, JPEG, GIF and WebP through and "
                           f"converts other formats with Pillow, which is not installed here (the operator can "
                           "pip install 'pegboard[images]'). Convert it to PNG with a command instead, e.g. "
                           "`convert in.tif png:- | base64 -w0`.") from None
        raise NotShown(f"{source} is not an image ShowImage recognises (its bytes begin {data[:8].hex(' ')}). "
                       "PNG, JPEG, GIF and WebP are shown as they are; Pillow, which would convert other "
                       "formats, is not installed here.") from None
    return _capped(_to_png(data, source), source)


def _capped(shown: Shown, source: str) -> Shown:
    if shown.size > MAX_IMAGE_BYTES:
        raise NotShown(f"The image from {source} is {shown.size:,} bytes as {shown.note}, over the "
                       f"{MAX_IMAGE_BYTES:,} bytes (3.75 MiB) the model APIs take. Make it smaller and try again: "
                       "scale it down (`convert in.png -resize 50% png:-`, ffmpeg's `-vf scale=iw/2:-1`) or "
                       "save it as JPEG.")
    return shown


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _other_raster(data: bytes) -> str | None:
    for magic, name in OTHER_RASTER:
        if data.startswith(magic):
            return name
    return "PNM" if _PNM.match(data[:3]) else None


def _refuse_non_images(data: bytes, source: str) -> None:
    """Say what bytes that are plainly no raster image are, before any decoder sees them."""
    head = data[:4096]
    if head.startswith(b"%PDF"):
        raise NotShown(f"{source} is a PDF, not an image. Read shows a PDF file's pages; to look at one page as "
                       "a picture, render it: `pdftoppm -png -r 100 -f 1 -l 1 in.pdf | base64 -w0`.")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not only a character cut at the end of the head
            return
        text = head[: exc.start].decode("utf-8")
    if any(c in text for c in "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f"):
        return
    lowered = text.lstrip().lower()
    if lowered.startswith("<svg") or (lowered.startswith("<?xml") and "<svg" in lowered):
        raise NotShown(f"{source} is an SVG drawing (text), not raster image bytes. Render it to PNG first, e.g. "
                       "`rsvg-convert in.svg | base64 -w0`.")
    raise NotShown(f"{source} decodes to text, not an image: {_clip(text.strip(), 80)!r}. ShowImage shows "
                   "raster images (PNG, JPEG, GIF and WebP; other raster formats converted to PNG).")


def _to_png(data: bytes, source: str) -> Shown:
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Any = Image.open(io.BytesIO(data))  # reads the header only
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise NotShown(f"The image from {source} is {width}×{height} pixels, more than the "
                               f"{MAX_PIXELS:,} ShowImage converts. Scale it down first, e.g. "
                               "`convert in.tif -resize 25% png:- | base64 -w0`.")
            kind = image.format or "image"
            frames = getattr(image, "n_frames", 1)
            image.seek(0)
            image.load()
            image = _png_ready(image)
            out = io.BytesIO()
            image.save(out, "PNG")
    except NotShown:
        raise
    except UnidentifiedImageError:
        raise NotShown(f"{source} is not an image (its bytes begin {data[:8].hex(' ')}, which no format Pillow "
                       "reads begins with).") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise NotShown(f"The image from {source} claims more pixels than Pillow will decode (a decompression "
                       "bomb, or a very large image): scale it down before showing it.") from None
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError) as exc:  # what Pillow's decoders raise
        raise NotShown(f"{source} could not be decoded as an image ({type(exc).__name__}: {exc}); it may be cut "
                       "short or damaged.") from None
    png = out.getvalue()
    pages = f", first of {frames} frames" if frames > 1 else ""
    return Shown(base64.b64encode(png).decode("ascii"), "image/png", len(png),
                 f"PNG ({width}×{height}, converted from {kind}{pages})")


def _png_ready(image: Any) -> Any:
    """The image in a mode PNG stores: 32-bit and float samples stretched
    over their range to 8-bit grey (clipping would make most of them white),
    colour spaces PNG lacks (CMYK, YCbCr, LAB, ...) as RGB, or RGBA when there
    is transparency."""
    if image.mode in _PNG_MODES:
        return image
    if image.mode in ("I", "F"):
        low, high = image.getextrema()
        scale = 255.0 / (high - low) if high > low else 0.0
        return image.point(lambda v: v * scale - low * scale).convert("L")
    has_alpha = "A" in image.getbands() or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")
