"""The bare baseline of benchmarks/bench_app.py: a Streamlit page with one number and one plotly
chart and nothing else, served beside the app so the app's first paint is measured as a ratio.

Same libraries, same figure kind (a plotly line of 32 points, the size of the app's sweeps),
same ``st.plotly_chart`` call; no costmodel import, no computation.
"""

import plotly.graph_objects as go
import streamlit as st

st.title("Bare page")
st.metric("A number", "42 ms")
x = [2.0**k for k in range(3, 35)]
figure = go.Figure(go.Scatter(x=x, y=[v / 1e9 for v in x], mode="lines", name="line"))
figure.update_xaxes(type="log")
st.plotly_chart(figure, key="bare_chart")
