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
from webapp.datasets.services import (
    corpus_documents,
    dataset_count_data_sources,
    dataset_create_from_upload,
    dataset_delete,
)

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


def _preview_rows(dataset: Dataset, protocol: str, template: str | None, count: int, source: str) -> list[dict]:
    """The first `count` rows, or with `source` the first `count` of that data source; each numbered by its
    place in the file, so a benchmark's rows say where they are."""
    if dataset.is_corpus:
        return corpus_documents(dataset, count)
    if dataset.format == DatasetFormat.SFT_TRACES.value:
        return _trace_rows(dataset, protocol, template, count)
    rows = []
    numbered = enumerate(iter_examples(Path(dataset.file_path), DatasetFormat(dataset.format)), 1)
    if source:
        numbered = ((number, example) for number, example in numbered if example.data_source == source)
    for number, example in islice(numbered, count):
        truth = example.ground_truth
        rows.append(
            {
                **_prompt_view(example, protocol, template),
                "number": number,
                "data_source": example.data_source,
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
    for number, row in enumerate(islice(iter_traces(Path(dataset.file_path), protocol), count), 1):
        segments = tools.segments(row.response, tool_outputs=row.tool_outputs)
        rows.append({**_prompt_view(row.example, protocol, template), "number": number, "response": segments})
    return rows


def _with_source(request: HttpRequest, source: str) -> str:
    """This page's query with `source` set (or, empty, dropped), keeping the protocol, template and rows."""
    query = request.GET.copy()
    query.pop("source", None)
    if source:
        query["source"] = source
    return f"?{query.urlencode()}"


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
    data_sources = dataset_count_data_sources(dataset=dataset)
    # Only problems have data sources to filter by; an unknown one shows no rows rather than every row.
    source = request.GET.get("source", "") if data_sources else ""
    rows, preview_error, preview_notice = [], None, None
    if source and source not in data_sources:
        preview_notice = f"No rows of data source '{source}'; this dataset's are {', '.join(data_sources)}."
    else:
        try:
            rows = _preview_rows(dataset, protocol, template or None, count, source)
        except (DatasetError, PromptTemplateError, OSError, ValueError) as exc:
            preview_error = str(exc)
    benchmarks = [
        {"name": name, "rows": rows_of, "link": _with_source(request, name), "current": name == source}
        for name, rows_of in data_sources.items()
    ]
    return render(
        request,
        "ui/dataset_detail.html",
        {
            "dataset": dataset,
            "rows": rows,
            "preview_error": preview_error,
            "preview_notice": preview_notice,
            "protocol": protocol,
            "template": template,
            "count": count,
            "source": source,
            "source_rows": data_sources.get(source),
            "benchmarks": benchmarks,
            "all_sources_link": _with_source(request, ""),
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
