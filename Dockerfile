# costmodel web app:  docker build -t costmodel .  &&  docker run -p 8501:8501 costmodel
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_SERVER_HEADLESS=true

# The package is installed from the repository into site-packages, without extras (the app needs
# neither torch nor the test tools); presets/ ships inside it as costmodel._presets and the bundled
# reference runs (costmodel/data/reference/) as package data of costmodel.data (pyproject).
COPY pyproject.toml README.md LICENSE /tmp/src/
COPY costmodel/ /tmp/src/costmodel/
COPY presets/ /tmp/src/presets/
RUN pip install --no-cache-dir /tmp/src && rm -rf /tmp/src

# A non-root user with a numeric id; the app (inside the installed package) is root-owned and
# read-only to it.
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --create-home --home-dir /home/app app
WORKDIR /home/app
USER 10001:10001

EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"]

# The packaged entry with the server options it needs (costmodel/web/launch.py), as
# `costmodel app`; it forwards `docker stop`'s SIGTERM to the server and waits for it.
CMD ["python", "-m", "costmodel.web", "--address", "0.0.0.0", "--port", "8501"]
