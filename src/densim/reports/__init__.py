"""Reports: self-contained HTML (jinja2 + plotly, plotly.js embedded once per file)."""
