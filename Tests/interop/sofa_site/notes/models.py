from django.db import models


class Note(models.Model):
    uid = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    done = models.BooleanField(default=False)

    class Meta:
        app_label = "notes"
