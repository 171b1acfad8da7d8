from sofa.base import DocumentBase

from .models import Note


class NoteDocument(DocumentBase):
    class Meta:
        model = Note
        document_id = "note"
        replica_field = "uid"
        fields = ["title", "done"]
