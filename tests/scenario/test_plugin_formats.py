"""The pytest plugin and the format: ``tearline.yaml`` is no scenario file but says the format
of the files beside it, and a deprecated form is a warning in pytest's summary (an error with
``-W error::FutureWarning``), the file's cases running as their new form."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

OLD = """\
name: old
description: A short stall with an old-style heartbeat.
link: {framing: sse, payload: messages, framing_options: {sse_body: close}}
faults:
  - kind: stall
    at: {frame: 2}
    duration_ms: 20
    heartbeat_text: ": ping\\n"
    heartbeat_interval_ms: 5
expect: {verdict: MESSAGE_COMPLETE, accepted_messages: 5}
"""


@pytest.fixture
def folder(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "tearline.yaml").write_text("format: 1\n")
    (pytester.path / "scenarios" / "old.yaml").write_text(OLD)
    return pytester


def test_the_settings_file_is_not_collected_and_the_old_form_warns(folder: pytest.Pytester) -> None:
    result = folder.runpytest("scenarios", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*old.yaml:8: ScenarioFormatWarning: *old.yaml:8: warning: faults?0?.heartbeat_text: "
            "deprecated (heartbeat-text-alone)*",
            "PASSED scenarios/old.yaml::old",
        ]
    )


def test_warnings_as_errors_fail_the_file(folder: pytest.Pytester) -> None:
    result = folder.runpytest("scenarios", "-p", "no:cacheprovider", "-W", "error::FutureWarning")
    result.assert_outcomes(errors=1)


def test_a_wrong_settings_file_fails_the_files_it_governs(folder: pytest.Pytester) -> None:
    (folder.path / "scenarios" / "tearline.yaml").write_text("format: 7\n")
    result = folder.runpytest("scenarios", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*old.yaml: not read: the settings file *tearline.yaml that governs it is wrong*"]
    )
