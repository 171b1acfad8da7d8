"""A django-sofa server (an independent CouchDB-replication endpoint) on
127.0.0.1, with a `Note` model as `note:<uid>` documents and two notes seeded.
Prints "port N" when ready; serves until killed."""
import os, signal, sys, tempfile

# A parent may start us with SIGTERM ignored or blocked (both survive exec): end on it as usual.
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="interop-test-only",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    INSTALLED_APPS=["django.contrib.contenttypes", "rest_framework", "sofa", "notes"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(tempfile.mkdtemp(), "sofa.sqlite3")}},
    ROOT_URLCONF="sofa.urls",
    SOFA_MODULE_NAME="documents",
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    USE_TZ=True,
)
django.setup()

from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from wsgiref.simple_server import make_server, WSGIRequestHandler

call_command("migrate", run_syncdb=True, verbosity=0)
from notes.models import Note
Note.objects.create(uid="a", title="from django", done=False)
Note.objects.create(uid="b", title="second", done=True)


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
print(f"port {server.server_port}", flush=True)
server.serve_forever()
