"""The one chromium of a pytest process (tests/_browser.SharedChromium, the session's
``_shared_chromium``): lent to one module at a time, each module's contexts closed when it gives
the browser back, and no event loop left marked as running in the thread between modules
(Playwright's sync API marks its own between calls; a notebook's kernel client or any
``asyncio.run`` in a later module then failed)."""

from __future__ import annotations

import asyncio

import pytest


def _loop_marked() -> bool:
    return asyncio._get_running_loop() is not None


async def _ran() -> str:
    await asyncio.sleep(0)
    return "ran"


@pytest.mark.browser
def test_the_process_chromium_is_lent_to_a_module_at_a_time(_shared_chromium):
    with _shared_chromium.lent() as first:
        page = first.new_context().new_page()
        page.set_content("<p>one</p>")
        assert page.text_content("p") == "one"
        assert _loop_marked()  # Playwright's, while a module holds the browser
        with pytest.raises(RuntimeError, match="lent already"), _shared_chromium.lent():
            pass  # a second holder at once would close the first one's pages at its end
        assert page.text_content("p") == "one"
    assert first.contexts == []  # the module's pages went with it
    assert not _loop_marked()
    assert asyncio.run(_ran()) == "ran"  # another loop runs in the thread
    with _shared_chromium.lent() as second:
        assert second is first and second.is_connected()  # not launched again
        page = second.new_page()
        page.set_content("<p>two</p>")
        assert page.text_content("p") == "two"
    assert second.contexts == [] and not _loop_marked()


@pytest.mark.browser
def test_a_chromium_that_went_away_is_launched_again(_shared_chromium):
    with _shared_chromium.lent() as gone:
        gone.close()  # as a crash leaves it: disconnected
    assert not gone.is_connected() and not _loop_marked()
    with _shared_chromium.lent() as fresh:
        assert fresh is not gone and fresh.is_connected()
        page = fresh.new_page()
        page.set_content("<p>back</p>")
        assert page.text_content("p") == "back"
    assert not _loop_marked()
