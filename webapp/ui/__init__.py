"""The browser pages: server-rendered templates with small, focused JavaScript (static/js/).

One module per page (or pair of pages) with its views; their routes are collected in urls.py.
Pages read through webapp.runs.selectors and write through the services, like the REST API.
"""
