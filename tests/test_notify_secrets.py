"""Secret URLs: where they come from, how they print, and scrubbing them out of text."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.notify.secrets import Secret, SecretError, load_secret, receiver, scrub

URL = "https://hooks.example.com/services/T000/B000/XXXXSECRET"


def test_a_secret_prints_as_a_mask() -> None:
    """repr, str and f-strings of a Secret, and of a dataclass holding one, show <secret>."""
    secret = Secret(URL)
    assert ["<secret>", "<secret>", "url=<secret>"] == [repr(secret), str(secret), f"url={secret}"]
    assert URL == secret.reveal()


def test_load_secret_from_value_file_and_credentials_directory(tmp_path: Path) -> None:
    """The value wins; else the *_file; else $CREDENTIALS_DIRECTORY/<name>; else None."""
    (tmp_path / "slack_url").write_text(URL + "\n")
    env = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert Secret("http://a") == load_secret("slack_url", value=" http://a ", env=env)
    assert Secret(URL) == load_secret("slack_url", file=tmp_path / "slack_url", env={})
    assert Secret(URL) == load_secret("slack_url", env=env)
    assert None is load_secret("am_url", env=env)
    assert None is load_secret("slack_url", env={})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"value": "x", "file": "/f"}, "slack_url: set slack_url or slack_url_file, not both"),
        ({"value": "  "}, "slack_url: empty"),
        (
            {"file": "/nonexistent/u"},
            "slack_url_file: cannot read /nonexistent/u: No such file or directory",
        ),
    ],
)
def test_load_secret_errors_name_the_setting(kwargs: dict[str, str], message: str) -> None:
    """Errors name the setting and the file, never a value."""
    with pytest.raises(SecretError) as error:
        load_secret("slack_url", env={}, **kwargs)
    assert message == str(error.value)


def test_an_empty_secret_file_is_refused_without_its_content(tmp_path: Path) -> None:
    """An empty file is an error naming the file."""
    (tmp_path / "u").write_text("\n")
    with pytest.raises(SecretError) as error:
        load_secret("slack_url", file=tmp_path / "u", env={})
    assert f"slack_url_file: {tmp_path / 'u'} is empty" == str(error.value)


def test_scrub_removes_url_and_path_and_keeps_the_host() -> None:
    """The whole URL and its path are each replaced by <secret>; the host names the receiver."""
    text = (
        f"POST {URL} failed: HTTPSConnectionPool(host='hooks.example.com', port=443): "
        "Max retries exceeded with url: /services/T000/B000/XXXXSECRET (Caused by x)"
    )
    expected = (
        "POST <secret> failed: HTTPSConnectionPool(host='hooks.example.com', port=443): "
        "Max retries exceeded with url: <secret> (Caused by x)"
    )
    assert expected == scrub(text, Secret(URL))


def test_receiver_is_scheme_and_host_only() -> None:
    """A URL's receiver keeps its scheme, host and port; never a user, password, path or query."""
    cases = {
        URL: "https://hooks.example.com",
        "http://bob:pw0rd@10.0.0.5:9093/api/?token=abc": "http://10.0.0.5:9093",
        "http://[::1]:8080/hook": "http://[::1]:8080",
        "not a url": "<secret>",
    }
    assert cases == {url: receiver(Secret(url)) for url in cases}
    assert "x <secret> y" == scrub("x bob:pw0rd y", Secret("http://bob:pw0rd@10.0.0.5:9093/a"))
