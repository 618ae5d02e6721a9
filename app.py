"""costmodel web app, for ``streamlit run app.py`` in a source checkout.

The entry itself ships in the package (costmodel/web/app.py); ``costmodel app``,
``python -m costmodel.web``, ``make run`` and the Docker image start it with the server options
the app needs (costmodel/web/launch.py). This file only delegates, so a checkout serves the same
app; .streamlit/config.toml gives it the same options.
"""

from costmodel.web.app import main

main()
