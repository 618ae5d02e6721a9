"""The Streamlit app's pages (one file each, run by app.py's st.navigation); the only package that imports streamlit."""
