"""The inspector in a real browser: Debian's headless chromium, driven by selenium through
/usr/bin/chromedriver (Selenium Manager is never asked to download anything)."""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("fastapi", reason="the web extra is not installed: pip install -e '.[web]'")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from msjax import web  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver are not installed: apt-get install -y chromium chromium-driver")
    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager reach the network
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,860"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


def test_the_page_plays_a_click_then_the_solver_finishes_the_game(browser, tmp_path):
    inspector = web.Inspector(default_board="6x6x5")
    with web.serve_in_thread(web.create_app(inspector)) as url:
        browser.get(url + "/")
        wait = WebDriverWait(browser, 120)
        wait.until(lambda b: b.find_element(By.ID, "status").get_attribute("data-status") == "new")
        browser.find_element(By.ID, "seed").send_keys("3")  # a game that the first click does not win
        browser.find_element(By.ID, "new-game").click()
        wait.until(lambda b: b.find_element(By.ID, "seed-shown").text == "3")
        browser.find_element(By.CSS_SELECTOR, '.cell[data-row="2"][data-col="2"]').click()
        wait.until(lambda b: b.find_element(By.ID, "status").get_attribute("data-status") != "new")
        assert browser.find_elements(By.CSS_SELECTOR, ".cell.open")
        browser.execute_script("document.getElementById('speed').value = 60")
        browser.find_element(By.ID, "autoplay").click()
        wait.until(lambda b: b.find_element(By.ID, "status").get_attribute("data-status") in ("won", "lost"))
        assert browser.find_element(By.ID, "last-move").text.startswith("Solver:")
        assert "of 1 games won" in browser.find_element(By.ID, "tally").text
        assert browser.find_element(By.ID, "error").get_attribute("hidden") is not None
        assert browser.save_screenshot(str(tmp_path / "inspector.png"))
