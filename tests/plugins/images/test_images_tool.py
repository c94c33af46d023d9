"""ShowImage (the images plugin): a PNG a command saved base64-encoded to the
scratchpad reaches the model as an image through every converter, the real
SDKs' loops and `pegboard serve`; other raster formats become PNG; text, SVG
and PDF bytes are refused saying what they are; the 3.75 MiB cap holds;
without Pillow the four pass-through formats still work and the rest say
what would convert them."""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _sdk_types import conforms
from pegboard import Toolbox, ToolResult
from pegboard.plugins.images import MAX_IMAGE_BYTES

Image = pytest.importorskip("PIL.Image")
anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")

pytestmark = pytest.mark.anyio


def picture(kind: str, mode: str = "RGB", size: tuple[int, int] = (12, 8), color: Any = (200, 30, 40)) -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, kind)
    return out.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "dot.png").write_bytes(picture("PNG"))
    return root


@pytest.fixture
def toolbox(project: Path) -> Toolbox:
    # The shell's sandbox off: the command only prints a file of the project.
    config = project.parent / "pegboard.toml"
    config.write_text('[plugins.shell]\nsandbox = "off"\n')
    return Toolbox.load(cwd=project, plugins=["shell", "images"], config=config)


async def shown_from_scratchpad(toolbox: Toolbox) -> tuple[ToolResult, str]:
    session = toolbox.session("bypassPermissions")
    try:
        saved = await session.call("Bash", {"command": "base64 -w0 dot.png", "scratchpad": "frame"})
        assert "scratchpad entry 'frame'" in saved.text_content(), saved.text_content()
        return await session.call("ShowImage", {"from_scratchpad": "frame"}), session.scratchpad["frame"]
    finally:
        await session.aclose()


async def test_a_png_from_the_scratchpad_is_an_image_in_every_converter(toolbox: Toolbox, project: Path) -> None:
    result, saved = await shown_from_scratchpad(toolbox)
    png = base64.b64encode((project / "dot.png").read_bytes()).decode()
    assert saved == png and not result.is_error, result.text_content()
    [image] = [c for c in result.content if c.type == "image"]
    assert (image.mime_type, image.data) == ("image/png", png)
    assert "PNG image" in result.text_content() and "scratchpad entry 'frame'" in result.text_content()

    block = result.to_anthropic("toolu_1")
    conforms(anthropic_types.ToolResultBlockParam, block)
    assert {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}} in block["content"]

    tool, user = result.to_openai_chat("call_1")
    conforms(openai_chat.ChatCompletionToolMessageParam, tool)
    conforms(openai_chat.ChatCompletionUserMessageParam, user)
    assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}} in user["content"]

    item = result.to_responses("call_1")
    conforms(openai_responses.ResponseInputItemParam, item)
    assert {"type": "input_image", "image_url": f"data:image/png;base64,{png}"} in item["output"]


# --- the real SDKs' loops, against servers speaking each API ----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("api", ["anthropic", "openai", "responses"])
async def test_the_image_reaches_the_model_through_each_api(api: str, toolbox: Toolbox, project: Path) -> None:
    from _model_loops import run_loop
    from _model_servers import model_server, say, use

    png = base64.b64encode((project / "dot.png").read_bytes()).decode()
    steps = [use(("Bash", {"command": "base64 -w0 dot.png", "scratchpad": "frame"})),
             use(("ShowImage", {"from_scratchpad": "frame"})), say("A red dot.")]
    session = toolbox.session("bypassPermissions")
    try:
        with model_server(api, steps) as server:
            await run_loop(api, server.url, session, "Look at dot.png")
    finally:
        await session.aclose()
    assert server.problems == [], server.problems
    assert len(server.requests) == 3
    sent = json.dumps(server.requests[2])
    expected = {"anthropic": '"media_type": "image/png", "data": "' + png,
                "openai": f'"image_url": {{"url": "data:image/png;base64,{png}"}}',
                "responses": f'"type": "input_image", "image_url": "data:image/png;base64,{png}'}[api]
    assert expected in sent
    assert png not in json.dumps(server.requests[1])  # the bytes went by the scratchpad, not the conversation


# --- pegboard serve -------------------------------------------------------------------------


@pytest.fixture
def served(toolbox: Toolbox) -> Iterator[tuple[Any, Any]]:
    pytest.importorskip("mcp")
    from pegboard.plugins.mcp._serve import SessionRegistry, build_server

    registry = SessionRegistry(toolbox, "bypassPermissions", single_connection=True)
    yield build_server(toolbox, registry), registry


@pytest.mark.slow
async def test_serve_gives_an_mcp_client_the_image(served: tuple[Any, Any], project: Path) -> None:
    from mcp import Client

    server, registry = served
    png = base64.b64encode((project / "dot.png").read_bytes()).decode()
    try:
        async with Client(server, mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed["ShowImage"].input_schema["properties"]) >= {"from_scratchpad", "base64"}
            saved = await client.call_tool("Bash", {"command": "base64 -w0 dot.png", "scratchpad": "frame"})
            assert not saved.is_error, saved.content
            shown = await client.call_tool("ShowImage", {"from_scratchpad": "frame"})
    finally:
        await registry.aclose()
    assert not shown.is_error, shown.content
    [image] = [c for c in shown.content if c.type == "image"]
    assert (image.mime_type, image.data) == ("image/png", png)


# --- conversion, refusals, the cap ---------------------------------------------------------------


async def show(toolbox: Toolbox, data: bytes | str) -> ToolResult:
    text = data if isinstance(data, str) else base64.b64encode(data).decode()
    session = toolbox.session("default")
    try:
        return await session.call("ShowImage", {"base64": text})
    finally:
        await session.aclose()


def sent_image(result: ToolResult) -> tuple[str, Any]:
    assert not result.is_error, result.text_content()
    [image] = [c for c in result.content if c.type == "image"]
    data = base64.b64decode(image.data)
    return image.mime_type, Image.open(io.BytesIO(data))


@pytest.mark.parametrize("kind", ["TIFF", "BMP", "ICO", "PPM"])
async def test_other_raster_formats_become_png(toolbox: Toolbox, kind: str) -> None:
    result = await show(toolbox, picture(kind, size=(16, 16)))
    mime, image = sent_image(result)
    assert (mime, image.format, image.size) == ("image/png", "PNG", (16, 16))
    assert image.convert("RGB").getpixel((3, 3)) == (200, 30, 40)
    assert f"converted from {kind if kind != 'PPM' else 'PPM'}" in result.text_content()


async def test_a_cmyk_tiff_becomes_rgb_and_wide_samples_are_stretched_to_grey(toolbox: Toolbox) -> None:
    mime, image = sent_image(await show(toolbox, picture("TIFF", mode="CMYK", color=(0, 255, 255, 0))))
    assert image.mode == "RGB" and image.getpixel((0, 0)) == (255, 0, 0)
    wide = Image.new("I", (2, 1))
    wide.putpixel((0, 0), 1000)
    wide.putpixel((1, 0), 70000)
    out = io.BytesIO()
    wide.save(out, "TIFF")
    mime, grey = sent_image(await show(toolbox, out.getvalue()))
    assert grey.mode == "L" and [grey.getpixel((0, 0)), grey.getpixel((1, 0))] == [0, 255]


async def test_a_multi_page_tiff_shows_its_first_page_and_says_so(toolbox: Toolbox) -> None:
    out = io.BytesIO()
    pages = [Image.new("RGB", (4, 4), c) for c in ("red", "green", "blue")]
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:])
    result = await show(toolbox, out.getvalue())
    assert sent_image(result)[1].convert("RGB").getpixel((0, 0)) == (255, 0, 0)
    assert "first of 3 frames" in result.text_content()


@pytest.mark.slow
async def test_a_conversion_past_the_pixel_bound_is_refused_before_decoding(toolbox: Toolbox) -> None:
    from pegboard.plugins.images._convert import MAX_PIXELS

    out = io.BytesIO()
    Image.new("1", (MAX_PIXELS // 4000 + 1, 4000)).save(out, "TIFF", compression="group4")
    assert len(out.getvalue()) < 100_000  # small on disk, huge once decoded
    result = await show(toolbox, out.getvalue())
    assert result.is_error and f"more than the {MAX_PIXELS:,} ShowImage converts" in result.text_content()


@pytest.mark.parametrize("kind, mime", [("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")])
async def test_jpeg_gif_and_webp_pass_through_untouched(toolbox: Toolbox, kind: str, mime: str) -> None:
    data = picture(kind)
    result = await show(toolbox, data)
    [image] = [c for c in result.content if c.type == "image"]
    assert (image.mime_type, base64.b64decode(image.data)) == (mime, data)


async def test_text_bytes_are_refused_saying_they_are_text(toolbox: Toolbox) -> None:
    result = await show(toolbox, b"Build finished in 3.2 s\nall 48 tests passed\n")
    assert result.is_error
    assert result.text_content().startswith("The base64 given decodes to text, not an image: 'Build finished")
    assert not [c for c in result.content if c.type == "image"]
    session = toolbox.session("bypassPermissions")
    try:
        await session.call("Bash", {"command": "echo 'all 48 tests passed'", "scratchpad": "log"})
        plain = await session.call("ShowImage", {"from_scratchpad": "log"})
    finally:
        await session.aclose()
    assert plain.is_error
    assert "Scratchpad entry 'log' holds text, not base64-encoded image bytes" in plain.text_content()
    assert "| base64 -w0" in plain.text_content()


@pytest.mark.parametrize("data, says", [
    (b"<svg xmlns='http://www.w3.org/2000/svg'><circle r='4'/></svg>", "is an SVG drawing"),
    (b"%PDF-1.7\n1 0 obj\n", "is a PDF, not an image"),
    (bytes(range(1, 200)) * 3, "is not an image"),
])
async def test_svg_pdf_and_noise_are_refused_saying_what_they_are(toolbox: Toolbox, data: bytes, says: str) -> None:
    result = await show(toolbox, data)
    assert result.is_error and says in result.text_content(), result.text_content()


@pytest.mark.slow
async def test_the_cap_holds_at_three_and_three_quarter_mebibytes(toolbox: Toolbox) -> None:
    signature = b"\x89PNG\r\n\x1a\n"
    at_cap = signature + bytes(MAX_IMAGE_BYTES - len(signature))
    assert not (await show(toolbox, at_cap)).is_error
    over = await show(toolbox, at_cap + b"\0")
    assert over.is_error and f"{MAX_IMAGE_BYTES + 1:,} bytes" in over.text_content()
    assert "3,932,160 bytes (3.75 MiB)" in over.text_content() and "scale it down" in over.text_content()
    # A conversion's result is capped too: noise does not compress.
    import random

    noise = Image.frombytes("RGB", (1200, 1200), random.Random(7).randbytes(1200 * 1200 * 3))
    out = io.BytesIO()
    noise.save(out, "BMP")
    converted = await show(toolbox, out.getvalue())
    assert converted.is_error and "as PNG (1200×1200, converted from BMP)" in converted.text_content()


async def test_exactly_one_source_and_a_missing_entry(toolbox: Toolbox) -> None:
    session = toolbox.session("default")
    try:
        neither = await session.call("ShowImage", {})
        both = await session.call("ShowImage", {"from_scratchpad": "a", "base64": "iVBO"})
        missing = await session.call("ShowImage", {"from_scratchpad": "frame"})
    finally:
        await session.aclose()
    assert neither.is_error and both.is_error and "exactly one of from_scratchpad" in both.text_content()
    assert missing.is_error and "No scratchpad entry 'frame'. Entries: none." == missing.text_content()


async def test_a_data_url_and_wrapped_base64_are_taken(toolbox: Toolbox) -> None:
    data = picture("PNG")
    encoded = base64.b64encode(data).decode()
    wrapped = "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76)) + "\n"
    for given in (f"data:image/png;base64,{encoded}", wrapped, encoded.rstrip("=")):
        mime, image = sent_image(await show(toolbox, given))
        assert mime == "image/png" and image.size == (12, 8)


async def test_without_pillow_the_four_formats_pass_and_the_rest_say_what_converts_them(
        toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch) -> None:
    tiff, png = picture("TIFF"), picture("PNG")
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL raises ImportError
    assert not (await show(toolbox, png)).is_error
    refused = await show(toolbox, tiff)
    assert refused.is_error and "is a TIFF image" in refused.text_content()
    assert "pip install 'pegboard[images]'" in refused.text_content()
    unknown = await show(toolbox, bytes(range(1, 200)))
    assert unknown.is_error and "Pillow, which would convert other formats, is not installed" in unknown.text_content()


@pytest.mark.parametrize("mode, decision", [
    ("default", "allow"), ("acceptEdits", "allow"), ("plan", "allow"), ("auto", "allow"), ("dontAsk", "allow"),
    ("bypassPermissions", "allow"), ("read", "allow"), ("workspace", "allow"), ("unrestricted", "allow"),
    ("ask", "ask"), ("none", "deny"),
])
async def test_permission_by_mode(toolbox: Toolbox, mode: str, decision: str) -> None:
    session = toolbox.session(mode)
    found = await session.decide("ShowImage", {"base64": "iVBORw0KGgo="})
    assert found.decision == decision, found.reason
    offered = "ShowImage" in {t.name for t in session.offered()}
    assert offered is (mode != "none")


@pytest.mark.slow
def test_a_png_passes_through_without_importing_pillow() -> None:
    import subprocess

    code = ("import asyncio, sys; from pegboard import Toolbox\n"
            "tb = Toolbox.load(cwd='.', plugins=['images'])\n"
            "s = tb.session('default')\n"
            "r = asyncio.run(s.call('ShowImage', {'base64': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlE"
            "QVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg=='}))\n"
            "print(r.is_error, 'PIL' in sys.modules, 'pegboard.plugins.images._convert' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False", "True"], done.stdout + done.stderr


def test_doctor_says_whether_pillow_converts(toolbox: Toolbox) -> None:
    from importlib import metadata

    from pegboard.plugins.images import pegboard_doctor

    [check] = pegboard_doctor()
    assert (check.name, check.status) == ("conversion", "ok")
    assert check.detail.startswith(f"Pillow {metadata.version('pillow')}: ShowImage converts TIFF, BMP")
