"""Datasets pages: the list with an upload form, and a dataset's rows as the model will see them."""

import json
from itertools import islice
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from trainer.data.datasets import DatasetError, DatasetFormat, Example, iter_examples, iter_traces
from trainer.protocols import PROTOCOL_NAMES, get_protocol
from trainer.protocols.prompts import DEFAULT_TEMPLATES, TEMPLATES, PromptTemplateError, build_prompt, tool_parameters
from webapp.core.permissions import may_change
from webapp.datasets.models import Dataset
from webapp.datasets.services import corpus_documents, dataset_create_from_upload, dataset_delete

PAGE_SIZE = 50
PREVIEW_ROWS = 5
MAX_PREVIEW_ROWS = 50


def _visible(request: HttpRequest, pk: int) -> Dataset:
    return get_object_or_404(Dataset.objects.visible_to(request.user).select_related("owner"), pk=pk)


@login_required
def dataset_list(request: HttpRequest) -> HttpResponse:
    upload_error = None
    status = 200
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            upload_error = "Choose a file to upload."
        else:
            try:
                dataset = dataset_create_from_upload(
                    user=request.user,
                    upload=upload,
                    name=request.POST.get("name", ""),
                    description=request.POST.get("description", ""),
                )
            except DatasetError as exc:
                upload_error = str(exc)
            except ValidationError as exc:
                upload_error = " ".join(exc.messages)
            else:
                what = "documents" if dataset.is_corpus else "rows"
                messages.success(request, f"Uploaded {dataset.name}: {dataset.row_count} {what}, {dataset.format}.")
                return redirect("dataset-detail", pk=dataset.pk)
        status = 400
    visible = Dataset.objects.visible_to(request.user).select_related("owner")
    page = Paginator(visible.order_by("-builtin", "-created_at", "-pk"), PAGE_SIZE).get_page(request.GET.get("page"))
    for dataset in page:
        dataset.may_delete = may_change(request.user, dataset)
    return render(
        request,
        "ui/datasets.html",
        {"page": page, "upload_error": upload_error, "form": request.POST},
        status=status,
    )


def _choice(value: str | None, choices, default: str) -> str:
    return value if value in choices else default


def _preview_rows(dataset: Dataset, protocol: str, template: str | None, count: int) -> list[dict]:
    if dataset.is_corpus:
        return corpus_documents(dataset, count)
    if dataset.format == DatasetFormat.SFT_TRACES.value:
        return _trace_rows(dataset, protocol, template, count)
    rows = []
    examples = iter_examples(Path(dataset.file_path), DatasetFormat(dataset.format))
    for example in islice(examples, count):
        truth = example.ground_truth
        rows.append(
            {
                **_prompt_view(example, protocol, template),
                "ground_truth": truth if isinstance(truth, str) else json.dumps(truth, indent=2),
                "tools": None if example.tools is None else [_tool_view(tool) for tool in example.tools],
            }
        )
    return rows


def _tool_view(tool: dict) -> dict:
    """An offered tool as the preview lists it: its name and description, and each parameter with its
    type (an enum as its values), its description and whether it is optional, where the tool says
    (trainer.protocols.prompts.tool_parameters, which the tool-signatures template lists too)."""
    spec = tool["function"] if isinstance(tool.get("function"), dict) else tool
    params = [
        {"name": p.name, "type": p.kind, "description": p.description, "optional": p.required is False}
        for p in tool_parameters(tool)
    ]
    return {"name": spec.get("name", ""), "description": str(spec.get("description", "")), "parameters": params}


def _prompt_view(example: Example, protocol: str, template: str | None) -> dict:
    prompt = build_prompt(example, protocol, template)
    # A raw template's prompt is text the model continues, with no chat template around it.
    return {"id": example.id, "messages": prompt.messages or [], "raw_text": prompt.text}


def _trace_rows(dataset: Dataset, protocol: str, template: str | None, count: int) -> list[dict]:
    """SFT traces as the cold start trains on them: the prompt rendered as RL renders it, then the
    response split into the model's text (trained on) and the tool outputs (masked from the loss)."""
    tools = get_protocol(protocol)
    rows = []
    for row in islice(iter_traces(Path(dataset.file_path), protocol), count):
        segments = tools.segments(row.response, tool_outputs=row.tool_outputs)
        rows.append({**_prompt_view(row.example, protocol, template), "response": segments})
    return rows


@login_required
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _visible(request, pk)
    # The protocol the rows are most likely trained with (the form's first choice).
    default = dataset.protocol or ("tool_call_json" if dataset.offers_tools else "python_markdown")
    protocol = _choice(request.GET.get("protocol"), PROTOCOL_NAMES, default)
    template = _choice(request.GET.get("template"), TEMPLATES, "")
    try:
        count = min(max(int(request.GET.get("rows", PREVIEW_ROWS)), 1), MAX_PREVIEW_ROWS)
    except ValueError:
        count = PREVIEW_ROWS
    rows, preview_error = [], None
    try:
        rows = _preview_rows(dataset, protocol, template or None, count)
    except (DatasetError, PromptTemplateError, OSError, ValueError) as exc:
        preview_error = str(exc)
    return render(
        request,
        "ui/dataset_detail.html",
        {
            "dataset": dataset,
            "rows": rows,
            "preview_error": preview_error,
            "protocol": protocol,
            "template": template,
            "count": count,
            "protocols": PROTOCOL_NAMES,
            "templates": list(TEMPLATES),
            "default_template": DEFAULT_TEMPLATES[protocol],
            "may_delete": may_change(request.user, dataset),
        },
    )


@login_required
@require_POST
def dataset_remove(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = _visible(request, pk)
    dataset_delete(dataset=dataset, user=request.user)
    messages.success(request, f"Deleted dataset {dataset.name}.")
    return redirect("datasets")
