import pytest

from servetriage import ConfigError, Settings


def test_from_env_reads_typed_values(tmp_path):
    s = Settings.from_env({"SERVETRIAGE_DATA_DIR": str(tmp_path), "SERVETRIAGE_MAX_INPUT_MB": "5",
                           "SERVETRIAGE_CHANNELS": "C1, C2", "SLACK_API_URL": "http://127.0.0.1:9/api",
                           "SERVETRIAGE_EMBEDDINGS": "off"})
    assert s.data_dir == tmp_path and s.max_input_bytes == 5 * 1024 * 1024
    assert s.channels == ("C1", "C2") and s.slack_api_url.endswith("/api/") and not s.embeddings
    assert not s.slack_enabled


def test_slack_needs_a_bot_token_and_a_way_in():
    assert Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}).slack_enabled
    assert not Settings.from_env({"SLACK_APP_TOKEN": "xapp-1"}).slack_enabled


@pytest.mark.parametrize("env", [{"SERVETRIAGE_PORT": "99999"}, {"SERVETRIAGE_MIN_CONFIDENCE": "2"},
                                 {"SERVETRIAGE_EMBEDDINGS": "maybe"}, {"SERVETRIAGE_WORKERS": "x"}])
def test_bad_values_are_config_errors(env):
    with pytest.raises(ConfigError):
        Settings.from_env(env)
