import pytest

from servetriage.classifier import redact

PLANTED = {
    "slack bot token": "token=xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "slack app token": "SLACK_APP_TOKEN xapp-1-A0123456789-1234567890123-abcdef0123456789",
    "hugging face": "HF_TOKEN hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai": "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "github classic": "remote ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz",
    "aws access key": "aws key AKIAIOSFODNN7EXAMPLE in env",
    "bearer": "Authorization: Bearer eyAbCdEfGhIjKlMnOpQrSt.uvwx",
    "url password": "redis://admin:s3cr3tPassw0rd@10.0.0.5:6379/0",
    "api key flag": "vllm serve m --api-key my-local-key-123456",
}
SECRETS = {
    "slack bot token": "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "slack app token": "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    "hugging face": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "github classic": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz",
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "bearer": "eyAbCdEfGhIjKlMnOpQrSt.uvwx",
    "url password": "s3cr3tPassw0rd",
    "api key flag": "my-local-key-123456",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_kind_of_secret_is_masked(kind):
    out = redact(PLANTED[kind])
    assert SECRETS[kind] not in out
    assert "[REDACTED]" in out


def test_private_key_block_is_masked_whole():
    text = ("before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGRw==\n"
            "-----END OPENSSH PRIVATE KEY-----\nafter")
    out = redact(text)
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in out and out.startswith("before") and out.endswith("after")


def test_ordinary_log_lines_are_untouched():
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 79.1 GiB"
    assert redact(line) == line
    url = "We couldn't connect to 'https://huggingface.co' to load the files"
    assert redact(url) == url
