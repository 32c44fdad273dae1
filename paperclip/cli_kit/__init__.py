"""What the commands that talk to the API share: the HTTP client and its options
(``client``), what they print (``output``), the settings they read (``settings``).

Imports no domain, no command and nothing of the server: the commands reach it over HTTP.
"""
