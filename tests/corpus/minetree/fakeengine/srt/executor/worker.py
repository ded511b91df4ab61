"""A small source file written for the miner's test: a wrapper that quotes the error it caught."""


def collective_call(method):
    try:
        method()
    except Exception as e:
        raise RuntimeError(f"Worker failed with error '{e}', please check the stack trace above for the root cause") from e
