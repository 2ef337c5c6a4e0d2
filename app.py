"""The dashboard's entry in a source checkout: `streamlit run app.py` (the same app as `advisor dashboard`).

Thin by design: the app lives in `reports/dashboard/` so an installed package carries it.
"""

from reports.dashboard.app import main

main()
