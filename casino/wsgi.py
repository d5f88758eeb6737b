import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casino.settings")
application = get_wsgi_application()

# ready before the first request (casino/warm.py)
from casino import warm  # noqa: E402

warm.run()
