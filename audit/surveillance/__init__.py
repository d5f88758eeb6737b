"""Surveillance: what no single coup shows (issue 14).

The statistics core (``data``, ``stats``, ``detect``, ``synth``) is pure: numpy,
scipy and statsmodels, the project's exact odds (``audit.reports.odds``), and
no database. The pipeline (``collect``, ``services``, ``tasks``, views) fills a
``data.CoupRows`` from the database, calls ``detect.detect`` and files the
alerts for the pit boss.
"""
